package node

import "testing"

func TestIsNilTellsANilValueOfEachKind(t *testing.T) {
	var nilPtr *int
	var nilErr error
	var holdsNilPtr any = nilPtr
	one := 1
	if NilnessOf[*int]() != NilWord || !IsNil(NilWord, nilPtr) || IsNil(NilWord, &one) {
		t.Fatal("pointers")
	}
	if k := NilnessOf[any](); k != NilReflect || !IsNil[any](k, nil) || !IsNil(k, holdsNilPtr) || IsNil[any](k, 3) {
		t.Fatal("interfaces: nil, or holding a nil pointer, are nil; a number is not")
	}
	if k := NilnessOf[error](); !IsNil(k, nilErr) {
		t.Fatal("a nil error")
	}
	if k := NilnessOf[[]int](); k != NilReflect || !IsNil[[]int](k, nil) || IsNil(k, []int{}) {
		t.Fatal("slices")
	}
	if k := NilnessOf[string](); k != NeverNil || IsNil(k, "") {
		t.Fatal("a string is never nil")
	}
}
