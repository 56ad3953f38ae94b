package rules

import "testing"

func TestGRPCMethod(t *testing.T) {
	tests := []struct {
		path, service, method string
		ok                    bool
	}{
		{"/pkg.Greeter/SayHello", "pkg.Greeter", "SayHello", true},
		{"/Greeter/Hi", "Greeter", "Hi", true},
		{"/pkg.Greeter/", "", "", false},
		{"//SayHello", "", "", false},
		{"/pkg.Greeter", "", "", false},
		{"/a/b/c", "", "", false},
		{"pkg.Greeter/SayHello", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		s, m, ok := GRPCMethod(tt.path)
		if s != tt.service || m != tt.method || ok != tt.ok {
			t.Errorf("GRPCMethod(%q) = %q, %q, %t; want %q, %q, %t", tt.path, s, m, ok, tt.service, tt.method, tt.ok)
		}
	}
}

// GRPCMethod reads a path from the wire: it never panics, and what it
// returns rebuilds the path.
func FuzzGRPCMethod(f *testing.F) {
	for _, s := range []string{"/pkg.Greeter/SayHello", "/a/b/c", "//x", "/", "", "/\xff/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		s, m, ok := GRPCMethod(path)
		if !ok {
			return
		}
		if "/"+s+"/"+m != path || s == "" || m == "" {
			t.Fatalf("GRPCMethod(%q) = %q, %q", path, s, m)
		}
	})
}
