package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
	"github.com/crsched/crs/harness/loadtest"
)

// A lease still held once every process has finished fails the end
// check; the error tells a lease that a process's Close could not give
// back (recorded in the session) from an accounting error.
func TestALeaseHeldAtTheEndIsToldApartFromAnUnfinishedGiveBack(t *testing.T) {
	needRedis(t)
	for _, unfinished := range []bool{false, true} {
		pool := poolName(t)
		cfg := loadtest.Config{Workers: 1, Resources: 1, Capacity: 1, Policy: config.Exclusive, Duration: time.Second}
		p, err := openPool(context.Background(), cfg, redisFlags{addr: testAddr, name: pool, wait: time.Second}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		l, err := p.pool.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if unfinished {
			// As another process of the session whose Close reported
			// ErrGiveBackUnfinished.
			if err := p.session.giveBackUnfinished(); err != nil {
				t.Fatal(err)
			}
		}
		err = p.Finish()
		want := "still leased after every process finished"
		if unfinished {
			want = "not an accounting error: 1 crsload process of this pool could not give back a lease in time"
		}
		if !errors.Is(err, crserrors.ErrResourceNotExcluded) || !strings.Contains(err.Error(), want) {
			t.Errorf("unfinished give-back recorded %v: Finish: %v, want ErrResourceNotExcluded saying %q", unfinished, err, want)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.Close()
		noKeysLeft(t, pool)
	}
}
