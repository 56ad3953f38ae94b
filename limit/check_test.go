package limit

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	if err := Check(nil); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("Check(nil) = %v, want ErrInvalidPolicy", err)
	}
	if err := Check(FixedWindow{Limit: 0, Window: 1e9}); err == nil {
		t.Fatal("Check of an invalid policy: nil error")
	}
	if err := Check(FixedWindow{Limit: 10, Window: 1e9}); err != nil {
		t.Fatalf("Check of a valid policy: %v", err)
	}
}
