package exchange

import "testing"

func TestHasDotSegment(t *testing.T) {
	for path, want := range map[string]bool{
		"/": false, "/a/b": false, "/file.txt": false, "/a/..b": false, "/.a": false, "/a%2Fb": false,
		"/.": true, "/..": true, "/./a": true, "/a/../b": true, "/%2e%2e/a": true, "/%2E/a": true,
		"/a/..%2Fb": true, "/a%2f..": true, "/a/.%2e": true,
	} {
		if got := HasDotSegment([]byte(path)); got != want {
			t.Errorf("hasDotSegment(%q) = %v, want %v", path, got, want)
		}
	}
}
