package accesslog

import (
	"testing"
	"time"
)

func TestAppendJSON(t *testing.T) {
	e := &Entry{
		Time: time.Date(2026, 3, 4, 5, 6, 7, 8000, time.FixedZone("", 3600)), Remote: []byte("::1"),
		Method: []byte("GET"), Host: []byte("api.example"), URI: []byte("/a?b=\"c\""), Status: 200, Bytes: 3,
		Duration: 1500 * time.Microsecond, UserAgent: []byte("x\xffy"), Rule: "r", Decision: "allowed",
	}
	want := `{"time":"2026-03-04T04:06:07.000008Z","remote_addr":"::1","method":"GET","host":"api.example","uri":"/a?b=\"c\"","status":200,"bytes":3,"duration_ms":1.500,"user_agent":"x\ufffdy","rule":"r","decision":"allowed"}` + "\n"
	if got := string(AppendJSON(nil, e)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	buf := make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], e) }); n != 0 {
		t.Errorf("AppendJSON allocates %v times", n)
	}
}
