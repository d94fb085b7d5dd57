package lookup

import "reflect"

// MayBeUnusable reports whether some values of ID cannot be map keys:
// floats and complex numbers (NaN), and interfaces, structs and arrays,
// which may hold those or a dynamic type that is not comparable. Keys of
// other kinds (strings, integers, pointers...) need no check.
func MayBeUnusable[ID comparable]() bool {
	switch reflect.TypeOf((*ID)(nil)).Elem().Kind() {
	case reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128,
		reflect.Interface, reflect.Struct, reflect.Array:
		return true
	}
	return false
}

// Usable reports whether k can identify a resource: it equals itself
// (not a NaN, nor a value holding one, which a map accepts any number of
// times and never finds again) and comparing it does not panic (an
// interface holding a slice, a map or a func, which would panic inside
// the map).
func Usable[ID comparable](k ID) (ok bool) {
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

// Repeats reports whether a key appears twice in keys.
func Repeats[ID comparable](keys []ID) bool {
	seen := make(map[ID]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; ok {
			return true
		}
		seen[k] = struct{}{}
	}
	return false
}
