package redispool

import (
	"context"
	"errors"
	"strings"
	"testing"

	crserrors "github.com/crsched/crs/errors"
)

// Every byte string but the empty one is a valid ID: the pool's keys are
// binary safe, and so must the scripts be. Each ID below goes through
// every operation next to an ordinary resource, which it must not
// affect.
func TestAnyNonEmptyIDWorksEndToEndBesideOtherResources(t *testing.T) {
	ids := map[string]string{
		"NUL":                 "key\x00secret",
		"only NUL":            "\x00",
		"leading NUL":         "\x00a",
		"control bytes":       "a\x01\x07\x1b\n\r\t\x7fb",
		"holder separator":    "0000000000:a",
		"listing lookalike":   ":",
		"field prefix":        "c:h:p",
		"counter lookalike":   "#n",
		"hash tag":            "{other}",
		"invalid UTF-8":       "\xff\xfe\xc3(",
		"long":                strings.Repeat("x", 99) + "\x00",
		"very long":           strings.Repeat("\x00long", 1<<14),
		"format verb":         "%s%d%010d",
		"Lua pattern":         "%a+.-*?[^]",
		"trailing whitespace": "a \n",
	}
	for name, id := range ids {
		t.Run(name, func(t *testing.T) {
			c := newClient(t)
			p := newPool(t, c, Options{})
			ctx := context.Background()
			add(t, p, Resource{ID: id, Priority: 0, Capacity: 2}, Resource{ID: "plain", Priority: 1})
			checkInvariants(t, c, p)
			first, second := mustAcquire(t, p), mustAcquire(t, p)
			if first.ID != id || second.ID != id {
				t.Fatalf("acquired %q and %q, want the odd ID twice", first.ID, second.ID)
			}
			if l := mustAcquire(t, p); l.ID != "plain" {
				t.Fatalf("acquired %q, want plain", l.ID)
			} else {
				mustRelease(t, l)
			}
			mustRelease(t, first)
			if err := second.Cooldown(ctx, 3_600_000_000_000); err != nil {
				t.Fatalf("Cooldown: %v", err)
			}
			for _, op := range []struct {
				name string
				err  error
			}{
				{"Include", p.Include(ctx, id)},
				{"Update", p.Update(ctx, id, 2)},
				{"Exclude", p.Exclude(ctx, id)},
				{"Include", p.Include(ctx, id)},
				{"Suspend", p.Suspend(ctx, id, 3_600_000_000_000)},
				{"Include", p.Include(ctx, id)},
			} {
				if op.err != nil {
					t.Fatalf("%s: %v", op.name, op.err)
				}
			}
			if l := mustAcquire(t, p); l.ID != "plain" {
				t.Fatalf("acquired %q after Update, want plain", l.ID)
			}
			l := mustAcquire(t, p)
			if l.ID != id {
				t.Fatalf("acquired %q, want the odd ID", l.ID)
			}
			if err := p.Add(ctx, Resource{ID: id}); !errors.Is(err, crserrors.ErrDuplicateKey) {
				t.Fatalf("second Add: %v, want ErrDuplicateKey", err)
			}
			if err := p.Remove(ctx, id); err != nil {
				t.Fatalf("Remove: %v", err)
			}
			mustRelease(t, l)
			checkInvariants(t, c, p)
			if s := stats(t, p); s.Resources != 1 || s.Held != 1 || s.Draining != 0 {
				t.Fatalf("after the odd resource left: %+v", s)
			}
		})
	}
}
