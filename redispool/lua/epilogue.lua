-- Appended after the operation's body, which scripts.go wraps in the
-- function main.
local reply = main()
local wake_err = finish()
return { reply[1], wake_err, unpack(reply, 2) }
