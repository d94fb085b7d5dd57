package redispool

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/crsched/crs/config"
	crserrors "github.com/crsched/crs/errors"
)

func TestNewRefusesBadOptions(t *testing.T) {
	// No server is needed: New sends nothing.
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	cases := []struct {
		name   string
		client redis.UniversalClient
		opts   Options
		want   error
	}{
		{"nil client", nil, Options{Name: "p"}, ErrNilClient},
		{"empty name", c, Options{}, ErrInvalidName},
		{"name with a brace", c, Options{Name: "a{b"}, ErrInvalidName},
		{"name with a closing brace", c, Options{Name: "a}"}, ErrInvalidName},
		{"negative lease TTL", c, Options{Name: "p", LeaseTTL: -time.Second}, crserrors.ErrInvalidDuration},
		{"lease TTL under a millisecond", c, Options{Name: "p", LeaseTTL: time.Microsecond}, crserrors.ErrInvalidDuration},
		{"negative recheck", c, Options{Name: "p", RecheckInterval: -1}, crserrors.ErrInvalidDuration},
		{"recheck of a nanosecond", c, Options{Name: "p", RecheckInterval: time.Nanosecond}, crserrors.ErrInvalidDuration},
		{"recheck under the floor", c, Options{Name: "p", RecheckInterval: MinRecheckInterval - 1}, crserrors.ErrInvalidDuration},
		{"ejection without a base time", c, Options{Name: "p", Ejection: config.Ejection{ConsecutiveFailures: 3}}, crserrors.ErrInvalidEjection},
		{"ejection share above 1", c, Options{Name: "p", Ejection: config.Ejection{ConsecutiveFailures: 3, BaseTime: time.Second, MaxEjectedShare: 2}}, crserrors.ErrInvalidEjection},
	}
	for _, tc := range cases {
		if p, err := New(tc.client, tc.opts); !errors.Is(err, tc.want) || p != nil {
			t.Errorf("%s: New = %v, %v; want nil, %v", tc.name, p, err, tc.want)
		}
	}
}

func TestNewAcceptsTheRecheckFloor(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	p, err := New(c, Options{Name: "p", RecheckInterval: MinRecheckInterval})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.recheck != MinRecheckInterval {
		t.Fatalf("recheck %v, want %v", p.recheck, MinRecheckInterval)
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	p, err := New(c, Options{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.ttl != DefaultLeaseTTL || p.ttlMs != 30000 || p.recheck != DefaultRecheckInterval || p.clock == nil {
		t.Fatalf("defaults not applied: ttl %v (%d ms), recheck %v", p.ttl, p.ttlMs, p.recheck)
	}
	for _, k := range append(p.keys[:], p.channel) {
		if len(k) < 4 || k[:3] != "{p}" {
			t.Errorf("key %q is not under the pool's hash tag", k)
		}
	}
}

func TestMillisRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		time.Nanosecond:                       1,
		time.Millisecond:                      1,
		time.Millisecond + 1:                  2,
		time.Second:                           1000,
		time.Duration(1<<63 - 1):              9223372036855,
		1500 * time.Microsecond:               2,
		2*time.Millisecond - time.Microsecond: 2,
	} {
		if got := millis(d); got != want {
			t.Errorf("millis(%v) = %d, want %d", d, got, want)
		}
	}
}
