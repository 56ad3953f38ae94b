package h2path

import "testing"

func TestIsGRPCContentType(t *testing.T) {
	for v, want := range map[string]bool{
		"application/grpc": true, "application/grpc+proto": true, "Application/GRPC;charset=x": true,
		"application/grpc-web": false, "application/json": false, "": false, "application/grp": false,
	} {
		if got := IsGRPCContentType([]string{v}); got != want {
			t.Errorf("%q: %t", v, got)
		}
	}
	if IsGRPCContentType([]string{"application/grpc", "application/grpc"}) {
		t.Error("two content types accepted")
	}
}
