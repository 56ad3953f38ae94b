package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/rules"
)

// loginLog is a combined-format log of a brute force and a user: the
// attacker 203.0.113.66 sends 10 wrong passwords (401), one every 10s;
// the user 198.51.100.5 types twice wrong and then logs in (200); a
// health check without a status line in between.
func loginLog() []byte {
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	line := func(t time.Time, ip, status string) {
		fmt.Fprintf(&b, "%s - - [%s] \"POST /login HTTP/1.1\" %s 12 \"-\" \"curl/8\"\n", ip, t.Format("02/Jan/2006:15:04:05 -0700"), status)
	}
	for i := range 10 {
		line(start.Add(time.Duration(i)*10*time.Second), "203.0.113.66", "401")
	}
	// Two hours later, the penalty is over: admitted and counted again.
	line(start.Add(2*time.Hour), "203.0.113.66", "401")
	line(start.Add(5*time.Second), "198.51.100.5", "401")
	line(start.Add(15*time.Second), "198.51.100.5", "401")
	line(start.Add(25*time.Second), "198.51.100.5", "200")
	return b.Bytes()
}

// The login defence replayed on the log's statuses: the attacker's first
// 3 failures are admitted and counted, the fourth refused and penalised
// for an hour, the 6 after refused by the penalty, and its return two
// hours later admitted and counted; the user, 2 typos and a login, is
// never refused.
func TestReplayCountsTheLoggedAnswersAndReportsPenalties(t *testing.T) {
	key, err := ParseKeySpec("ip")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Key: key, Top: 10, Rules: &Rules{Name: "login.yaml", Config: rules.Config{Rules: []rules.Rule{{
		Name:     "login",
		Match:    rules.Match{Paths: []string{"/login"}},
		Count:    &rules.Count{Statuses: []string{"401", "403"}},
		Penalty:  time.Hour,
		Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 3, Window: "15m"}},
	}}}}}
	rep, err := Run(context.Background(), bytes.NewReader(loginLog()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if p.Refused != 7 || p.KeysAffected != 1 || p.TopRefused[0].Key != "203.0.113.66" {
		t.Fatalf("refused %d, keys %d, top %+v", p.Refused, p.KeysAffected, p.TopRefused)
	}
	if p.Counting == nil || *p.Counting != (CountingReport{Counted: 6}) {
		t.Fatalf("counting %+v", p.Counting)
	}
	if p.Penalties == nil || *p.Penalties != (PenaltyReport{Refusals: 7, Started: 1, Keys: 1}) {
		t.Fatalf("penalties %+v", p.Penalties)
	}
	var text, html bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"counting rules charged 6 answers", "penalties: 7 of the 7 refusals were penalties; 1 started, on 1 key(s)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(html.String(), "<b>7</b> of the 7 refusals were penalties") || !strings.Contains(html.String(), "charged <b>6</b> answers") {
		t.Errorf("html lacks the counting and penalty lines")
	}
	js, err := json.Marshal(rep)
	if err != nil || !strings.Contains(string(js), `"penalties":{"refusals":7,"started":1,"keys":1}`) || !strings.Contains(string(js), `"counting":{"counted":6,"no_status":0}`) {
		t.Errorf("json: %v %s", err, js)
	}
	// Without the penalty, the attacker is refused only while the window
	// is full: the same 7 here (15m), and no penalty figures.
	cfg.Rules.Config.Rules[0].Penalty = 0
	rep, err = Run(context.Background(), bytes.NewReader(loginLog()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Policies[0]; p.Penalties != nil || p.Refused != 7 || p.Counting.Counted != 6 {
		t.Fatalf("without penalty: %+v", p)
	}
}

func TestReplayStatusParse(t *testing.T) {
	for in, want := range map[string]int{"401": 401, "200": 200, "-": 0, "": 0, "99": 0, "600": 0, "4x1": 0, "1000": 0, "499": 0, "498": 498} {
		if got := parseStatus([]byte(in)); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

// A JSON line without a status is admitted and not charged, and the
// report says so; so is a line of status 499 (client closed request),
// which a rule counting 4xx would otherwise charge.
func TestReplayLineWithoutStatusIsNotCharged(t *testing.T) {
	for _, second := range []string{``, `,"status":499`} {
		testReplayLineWithoutStatus(t, second)
	}
}

func testReplayLineWithoutStatus(t *testing.T, second string) {
	key, err := ParseKeySpec("ip")
	if err != nil {
		t.Fatal(err)
	}
	log := `{"time":"2026-11-29T10:00:00Z","remote_addr":"203.0.113.7","method":"POST","uri":"/login","status":401}
{"time":"2026-11-29T10:00:01Z","remote_addr":"203.0.113.7","method":"POST","uri":"/login"` + second + `}
{"time":"2026-11-29T10:00:02Z","remote_addr":"203.0.113.7","method":"POST","uri":"/login","status":401}
{"time":"2026-11-29T10:00:03Z","remote_addr":"203.0.113.7","method":"POST","uri":"/login","status":401}
`
	cfg := Config{Key: key, Rules: &Rules{Name: "r", Config: rules.Config{Rules: []rules.Rule{{
		Name: "login", Count: &rules.Count{Statuses: []string{"4xx"}},
		Policies: []rules.Policy{{Algorithm: "fixed_window", Limit: 2, Window: "1m"}},
	}}}}}
	rep, err := Run(context.Background(), strings.NewReader(log), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Policies[0]
	if rep.Input.Simulated != 4 || p.Refused != 1 || p.Counting == nil || *p.Counting != (CountingReport{Counted: 2, NoStatus: 1}) || p.Penalties != nil {
		t.Fatalf("second line %q: simulated %d, refused %d, counting %+v, penalties %+v", second, rep.Input.Simulated, p.Refused, p.Counting, p.Penalties)
	}
	var text bytes.Buffer
	WriteText(&text, rep)
	if !strings.Contains(text.String(), "1 admitted requests they matched have no status in the log and were not charged") {
		t.Errorf("text:\n%s", text.String())
	}
}
