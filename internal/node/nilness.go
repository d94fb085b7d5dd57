package node

import (
	"reflect"
	"unsafe"
)

// Nilness is how values of a type can be nil, which Add and Update must
// reject. NilnessOf decides it once, so that IsNil calls reflect only for
// the types that need it.
type Nilness uint8

const (
	NeverNil   Nilness = iota
	NilWord            // one machine word, nil when zero: pointers, maps, channels, funcs
	NilReflect         // interfaces (nil, or holding a nil) and slices: ask reflect
)

// NilnessOf is how values of T can be nil.
func NilnessOf[T any]() Nilness {
	if WordShaped[T]() {
		return NilWord
	}
	switch reflect.TypeOf((*T)(nil)).Elem().Kind() {
	case reflect.Interface, reflect.Slice:
		return NilReflect
	}
	return NeverNil
}

// IsNil reports whether v, of a type whose nilness is k, is nil.
func IsNil[T any](k Nilness, v T) bool {
	switch k {
	case NilWord:
		return *(*unsafe.Pointer)(unsafe.Pointer(&v)) == nil
	case NilReflect:
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
