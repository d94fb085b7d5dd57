package scheduler

import (
	"fmt"
	"math"
	"reflect"
	"unsafe"

	"github.com/crsched/crs/internal/node"
	"github.com/crsched/crs/internal/shard"
)

// capacityOf runs the user's Capacity function, outside any lock, and
// brings its result into [1, math.MaxInt32] (see config.Config.Capacity):
// a node keeps its capacity and holder count in 32 bits.
func (s *Scheduler[T, ID]) capacityOf(v T) int32 {
	if s.capacity == nil {
		return 1
	}
	return int32(min(max(s.capacity(v), 1), math.MaxInt32))
}

func (s *Scheduler[T, ID]) isNil(v T) bool {
	switch s.nilness {
	case nilWord:
		return *(*unsafe.Pointer)(unsafe.Pointer(&v)) == nil
	case nilReflect:
		rv := reflect.ValueOf(any(v))
		switch rv.Kind() {
		case reflect.Invalid:
			return true
		case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.Slice, reflect.UnsafePointer:
			return rv.IsNil()
		}
		return false // an interface holding a string, a number, a struct...
	}
	return false
}

// nilnessOf decides, once at New, how isNil tells a nil T, so that Add
// and Update call reflect only for the types that need it.
func nilnessOf[T any]() nilness {
	if node.WordShaped[T]() {
		return nilWord
	}
	switch reflect.TypeOf((*T)(nil)).Elem().Kind() {
	case reflect.Interface, reflect.Slice:
		return nilReflect
	}
	return neverNil
}

func opError[ID comparable](op string, id ID, err error) error {
	return fmt.Errorf("%s %v: %w", op, id, err)
}

// mayBeUnusable reports whether some values of ID cannot be map keys:
// floats and complex numbers (NaN), and interfaces, structs and arrays,
// which may hold those or a dynamic type that is not comparable. Keys of
// other kinds (strings, integers, pointers...) need no check.
func mayBeUnusable[ID comparable]() bool {
	switch reflect.TypeOf((*ID)(nil)).Elem().Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128,
		reflect.Interface, reflect.Struct, reflect.Array:
		return true
	}
	return false
}

// usable reports whether k can identify a resource: it equals itself
// (not a NaN, nor a value holding one, which a map accepts any number of
// times and never finds again) and comparing it does not panic (an
// interface holding a slice, a map or a func, which would panic inside
// the lookup map).
func usable[ID comparable](k ID) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return equal(k, k)
}

// equal is ==, out of line so that comparing a key with itself reads as
// the test it is.
func equal[ID comparable](a, b ID) bool { return a == b }

// find returns the node for id and its shard, or nil. The caller must lock
// the shard and check that the node was not removed in between.
func (s *Scheduler[T, ID]) find(id ID) (*node.Node[T, ID], *shard.Shard[T, ID]) {
	if s.checkKeys && !usable(id) {
		return nil, nil // never added: Add refuses such a key
	}
	n, ok := s.nodes.Get(id)
	if !ok {
		return nil, nil
	}
	return n, &s.shards[n.Shard]
}
