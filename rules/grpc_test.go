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
