package mutant

import (
	"os"
	"testing"
)

func TestOnlyTheNamedMutantIsOn(t *testing.T) {
	if On("") {
		t.Fatal("the empty name must never be on")
	}
	if os.Getenv(Env) == "" && On("quick.token") {
		t.Fatal("a mutant is on with no mutant selected")
	}
}
