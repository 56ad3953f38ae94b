package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
)

// A nil policy is an error, as in the other stores, not a panic.
func TestNilPolicyIsAnError(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Apply(context.Background(), "k", nil, 1); !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Fatalf("Apply: err %v, want ErrInvalidPolicy", err)
	}
	if _, err := s.ApplyAll(context.Background(), []limit.Request{{Key: "k", Cost: 1}}); !errors.Is(err, limit.ErrInvalidPolicy) {
		t.Fatalf("ApplyAll: err %v, want ErrInvalidPolicy", err)
	}
}
