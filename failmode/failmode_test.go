package failmode

import "testing"

func TestOfTakesTheFirstSetThenDefault(t *testing.T) {
	for _, c := range []struct {
		modes []Mode
		want  Mode
	}{
		{nil, Local},
		{[]Mode{Unset, Unset}, Default},
		{[]Mode{Unset, Closed}, Closed},
		{[]Mode{Open, Closed}, Open},
	} {
		if got := Of(c.modes...); got != c.want {
			t.Errorf("Of(%q) = %q, want %q", c.modes, got, c.want)
		}
	}
}

func TestOldNamesTheWordToWrite(t *testing.T) {
	for s, want := range map[string]Mode{
		"open": Open, "closed": Closed, "local": Local,
		"fail_open": Open, "fail_closed": Closed, "allow": Open, "refuse": Closed,
	} {
		if got, ok := Old(s); !ok || got != want {
			t.Errorf("Old(%q) = %q, %v, want %q", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "maybe", "Open", "fail"} {
		if got, ok := Old(s); ok {
			t.Errorf("Old(%q) = %q, want none", s, got)
		}
		if Mode(s).Known() {
			t.Errorf("%q is known", s)
		}
	}
}
