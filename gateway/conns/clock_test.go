package conns

import (
	"testing"
	"time"
)

// monoNow never goes back and stays with the wall clock it started from.
func TestMonoNow(t *testing.T) {
	a := MonoNow()
	w := time.Now()
	b := MonoNow()
	if b.Before(a) {
		t.Fatalf("monoNow went back: %v then %v", a, b)
	}
	if d := w.Sub(a); d < -time.Second || d > time.Second {
		t.Fatalf("monoNow is %v off the wall clock", d)
	}
}

func BenchmarkTimeNow(b *testing.B) {
	for b.Loop() {
		_ = time.Now()
	}
}

func BenchmarkMonoNow(b *testing.B) {
	for b.Loop() {
		_ = MonoNow()
	}
}
