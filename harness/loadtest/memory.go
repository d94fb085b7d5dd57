package loadtest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The memory a run takes, per worker and per resource, as measured
// (docs/crsload.md, "Memory"): the growth of the peak resident set of
// crsload runs as -workers or -resources grow. A worker is a goroutine
// with its stack, contexts and generator; a resource the scheduler's
// node, the harness's counters and the report's row. An llm worker also
// holds an HTTP connection and its buffers, and the in-process mock's
// end of it; an llm key, the scheduler's buckets and the mock's.
const (
	workerBytes    = 2900   // measured 2,840 (the mutex baseline's live heap: 2,820)
	resourceBytes  = 400    // measured 390 with crs, 320 with the mutex baseline
	llmWorkerBytes = 50_000 // measured 48,800, every worker's call in flight
	llmKeyBytes    = 2000   // measured 1,970
)

// memoryNeed is about how much memory a run of c takes, in bytes.
func (c Config) memoryNeed() (need, perWorker, perResource float64) {
	perWorker, perResource = workerBytes, resourceBytes
	if c.Scenario == LLM {
		perWorker, perResource = llmWorkerBytes, llmKeyBytes
	}
	return float64(c.Workers)*perWorker + float64(c.Resources)*perResource, perWorker, perResource
}

// checkMemory refuses a run that needs more memory than avail, what this
// machine has available (where says where that figure comes from):
// past it, the run would swap or be killed before it measured anything,
// after minutes spent setting it up. The error names the flag with the
// larger share.
func checkMemory(c Config, avail uint64, where string) error {
	need, w, r := c.memoryNeed()
	if need <= float64(avail) {
		return nil
	}
	flag := "workers"
	if float64(c.Resources)*r > float64(c.Workers)*w {
		flag = "resources"
	}
	return fmt.Errorf("%s: %s workers and %s resources would need about %s of memory (%s a worker, %s a resource), more than the %s %s: the run would swap or be killed; use fewer, or -force to run anyway",
		flag, group(c.Workers), group(c.Resources), bytesText(need), bytesText(w), bytesText(r), bytesText(float64(avail)), where)
}

// assumedMemory is what availableMemory assumes where it can read
// nothing.
const assumedMemory = 16 << 30

// availableMemory is the memory a run may take without swapping: Linux's
// MemAvailable, less if the process's cgroup (a container) allows less.
// Elsewhere it assumes assumedMemory. where says which.
func availableMemory() (avail uint64, where string) {
	avail, where = assumedMemory, "assumed (this system's available memory could not be read)"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if kb, ok := meminfoField(b, "MemAvailable"); ok {
			avail, where = kb<<10, "this machine has available"
		}
	}
	limit, errLimit := readUint("/sys/fs/cgroup/memory.max") // "max" when unlimited
	used, errUsed := readUint("/sys/fs/cgroup/memory.current")
	if errLimit == nil && errUsed == nil && used < limit && limit-used < avail {
		avail, where = limit-used, "this process's cgroup has left (memory.max)"
	}
	return avail, where
}

// meminfoField reads a "Name:   123 kB" line of /proc/meminfo.
func meminfoField(b []byte, name string) (uint64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == name+":" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// bytesText writes a size with two significant digits or more, in
// decimal units as a reader compares them with a machine's: 58 GB,
// 2.9 kB, 400 B.
func bytesText(n float64) string {
	for _, u := range []struct {
		unit string
		size float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if n >= u.size {
			return sig3(n/u.size) + " " + u.unit
		}
	}
	return strconv.FormatFloat(n, 'f', 0, 64) + " B"
}
