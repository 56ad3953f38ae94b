package limit_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/limit/limittest"
)

func TestConformanceVectors(t *testing.T) { limittest.RunPure(t) }
