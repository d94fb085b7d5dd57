package lookup

import (
	"math"
	"testing"
)

func TestAKeyThatIsNotEqualToItselfOrPanicsIsNotUsable(t *testing.T) {
	if !Usable(1.5) || Usable(math.NaN()) {
		t.Fatal("a float key: want usable unless NaN")
	}
	if !Usable[any]("x") || Usable[any]([]int{1}) || Usable[any](struct{ f float64 }{math.NaN()}) {
		t.Fatal("an interface key: want usable unless it holds a slice or a NaN")
	}
	if MayBeUnusable[string]() || MayBeUnusable[int]() || !MayBeUnusable[float64]() || !MayBeUnusable[any]() || !MayBeUnusable[[2]int]() {
		t.Fatal("MayBeUnusable: only floats, complex numbers, interfaces, structs and arrays need a check")
	}
}

func TestRepeatsFindsAKeyGivenTwiceAnywhere(t *testing.T) {
	if Repeats([]string{"a", "b", "c"}) || !Repeats([]string{"a", "b", "c", "a"}) || Repeats[int](nil) {
		t.Fatal("Repeats")
	}
}
