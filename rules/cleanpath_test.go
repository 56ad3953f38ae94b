package rules

import "testing"

func TestCleanPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"*", "*"},
		{"/", "/"},
		{"/api/x", "/api/x"},
		{"//api/x", "/api/x"},
		{"/./api/x", "/api/x"},
		{"/x/../api/x", "/api/x"},
		{"/../api/x", "/api/x"},
		{"/api//x//", "/api/x/"},
		{"/api/x/..", "/api/"},
		{"/api/.", "/api/"},
		{"/api/x/../", "/api/"},
		{"/..", "/"},
		{"/.", "/"},
		{"//", "/"},
		{"/a/.hidden", "/a/.hidden"},
		{"/a/...", "/a/..."},
		{"/a/..b/c", "/a/..b/c"},
	} {
		if got := CleanPath(c.in); got != c.want {
			t.Errorf("CleanPath(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCleanPathAllocatesNothingForACleanPath(t *testing.T) {
	p := "/api/items/42/.well-known"
	if n := testing.AllocsPerRun(100, func() { _ = CleanPath(p) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
