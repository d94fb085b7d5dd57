package queue

import (
	"fmt"
	"testing"

	"github.com/crsched/crs/internal/budget"
)

// BenchmarkOrderOfService times the choice of the next waiter, and the
// waiter's return to the back of its class, with one waiter in each of
// n tenants' classes: the choice is a heap's, so 10,000 tenants waiting
// cost a few more levels of it than 10, not a scan.
func BenchmarkOrderOfService(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("tenants=%d", n), func(b *testing.B) {
			var q Queue[int]
			for i := range n {
				w := newWaiter(true)
				w.Tenant, w.Units = &budget.Tenant{Name: fmt.Sprint(i), Weight: int64(1 + i%3)}, 1
				q.Push(w)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				w := q.Pop()
				q.Push(w)
			}
		})
	}
}
