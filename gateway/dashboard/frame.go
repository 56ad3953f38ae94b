package dashboard

// Hello is the data of EventHello.
type Hello struct {
	// Capacity is how many samples the charts keep (history / period).
	Capacity int `json:"capacity"`
	// Period is the time between frames, in seconds.
	Period float64 `json:"period"`
	// Keys is how keys are shown: plain, hash or truncate.
	Keys string `json:"keys"`
	// History is the samples so far, oldest first.
	History []Sample `json:"history"`
	// Words is the running configuration in words (config.Describe).
	Words string `json:"words"`
}

// Frame is the data of EventFrame: one period's figures.
type Frame struct {
	// Sample is the period's decision rates.
	Sample Sample `json:"sample"`
	// Rules are the heaviest keys of each rule, in configuration order.
	Rules []RuleTops `json:"rules"`
	// Penalties are the penalties in force (rules.Policy.Penalty), the
	// longest left first, at most observe.MaxPenaltiesShown.
	Penalties []Penalty `json:"penalties"`
	// Status is the state of the store and of any other part that
	// reports one (adaptive controllers, a gossip mesh).
	Status []Status `json:"status"`
	// Words is set when the configuration changed since the last frame.
	Words string `json:"words,omitempty"`
}

// Sample is one period's decision rates, per rule and policy.
type Sample struct {
	// Time is the sample's end, in Unix milliseconds.
	Time int64 `json:"t"`
	// Rates has one entry per rule and policy that matched anything.
	Rates []Rate `json:"rates"`
}

// Rate is the decisions per second of one rule's policy, by outcome. A
// shadow rule's would-be refusals are ShadowRefused, its passes Allowed.
type Rate struct {
	Rule          string  `json:"rule"`
	Policy        string  `json:"policy"`
	Shadow        bool    `json:"shadow,omitempty"`
	Allowed       float64 `json:"allowed"`
	Delayed       float64 `json:"delayed"`
	Refused       float64 `json:"refused"`
	ShadowRefused float64 `json:"shadow_refused"`
}

// RuleTops are a rule's heaviest keys, by requests and by refusals.
type RuleTops struct {
	Rule   string `json:"rule"`
	Shadow bool   `json:"shadow,omitempty"`
	// Requests and Refusals are the totals the lists are taken from.
	Requests uint64 `json:"requests"`
	Refusals uint64 `json:"refusals"`
	// Volume and Refused list the keys, heaviest first.
	Volume  []Hitter `json:"volume"`
	Refused []Hitter `json:"refused"`
}

// Hitter is one heavy key.
type Hitter struct {
	// Key is the key as configured to be shown.
	Key string `json:"key"`
	// Count is an upper bound of the key's requests (or refusals);
	// Error bounds the overestimate (package topk).
	Count uint64 `json:"count"`
	Error uint64 `json:"error"`
	// Remaining is the key's remaining quota under the rule at its last
	// request, or -1 when not known (another rule decided that request).
	Remaining int64 `json:"remaining"`
}

// Penalty is one penalty in force: a key a policy refused, refused for
// the penalty's time.
type Penalty struct {
	Rule   string `json:"rule"`
	Policy string `json:"policy"`
	// Key is the key as configured to be shown (as Hitter.Key).
	Key string `json:"key"`
	// Left is the time the penalty has left, in seconds.
	Left float64 `json:"left"`
}

// Status is the state of one part of the gateway.
type Status struct {
	// Name names the part: "memory store", "redis", "gossip".
	Name string `json:"name"`
	// Kind is where the page shows it: "store" or "adaptive".
	Kind string `json:"kind"`
	// Fields are its figures, in order.
	Fields []Field `json:"fields"`
}

// Field is one figure of a Status.
type Field struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Alert marks a value that needs attention (breaker open, store
	// full).
	Alert bool `json:"alert,omitempty"`
}

// StatusProvider is a part of the gateway that reports its state to the
// dashboard once per frame. Status must be safe for concurrent use and
// quick: it runs on the dashboard's timer, not on the request path.
type StatusProvider interface {
	Status() Status
}
