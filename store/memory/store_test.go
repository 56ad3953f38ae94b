package memory_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/limit"
	"github.com/tollgate-dev/tollgate/limit/limittest"
	"github.com/tollgate-dev/tollgate/store/memory"
)

func open(t *testing.T, clock func() int64) limit.Store {
	st, err := memory.New(memory.Config{MaxKeys: 1024, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestConformanceVectors(t *testing.T) {
	limittest.Run(t, open, limittest.Options{})
}
