-- call runs an operation's body, main, for a call with keys and argv.
-- A write whose request has a recorded status (it was
-- applied, and this is the same command sent again) replies that status
-- and applies nothing; otherwise it applies and records its status.
-- Every recorded write's reply is {status}, so the status is all there
-- is to record. An operation that ends a lease (own: see scripts.go)
-- tells a repeat itself, for less: the repeat finds the lease gone, and
-- only then reads the record (repeated). Slots that became leasable
-- then go to the waiters.
local function call(main, keys, argv, own)
  begin(keys, argv)
  local reply
  local seen = RECORD and not own and recorded()
  if seen then
    reply = { tonumber(seen) }
  else
    reply = main()
  end
  if RECORD then
    -- Written again on a repeat, so that a WAIT after this reply
    -- (WaitReplicas) counts the replicas that have the first write too:
    -- they have it if they have this later one.
    record(reply[1])
  end
  if freed then
    serve()
  end
  tidy()
  return { reply[1], wake_err, unpack(reply, 2) }
end
