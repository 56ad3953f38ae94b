package rules

import (
	"errors"
	"log/slog"
	"sync"
	"text/template"
	"time"

	"github.com/tollgate-dev/tollgate/internal/logthrottle"
	"github.com/tollgate-dev/tollgate/limit"
)

// Engine is a compiled, immutable rule set over a store. It is safe for
// concurrent use; build a new Engine to change rules (counters live in the
// store, so an unchanged rule keeps its counts).
type Engine struct {
	store     limit.Store
	groups    []storeGroup // nil when every rule is charged on store
	enforced  []*compiledRule
	shadow    []*compiledRule
	ip        ipResolver
	geo       Geo // Config.Geo: the country and asn parts and matchers
	maxKeyLen int
	keys      *keyCache

	styleDraft10, styleDraft6, styleLegacy bool
	resetEpoch                             bool

	status, errorStatus int
	problemType, title  string
	detail              string
	// The problem+json body's fixed parts (compileProblem): its opening
	// up to the detail member for the refusal and the store-error
	// status, and the detail member's value when the configuration fixes
	// it.
	problemRefused, problemErrored string
	problemDetail                  string
	bodyTmpl                       *template.Template
	contentType                    string

	observer  Observer
	logger    *logthrottle.Logger // store errors, rate-limited
	shadowLog *slog.Logger
	now       func() time.Time

	// refusals remembers checks known to refuse (refusalCache); nil
	// when no rule counts or has a penalty. mono is its clock, Unix-like
	// ns: Config.Now's when set, else a monotonic reading.
	refusals *refusalCache
	mono     func() int64

	batches   sync.Pool // *[]limit.Request
	decisions sync.Pool // *[]limit.Decision, for ApplyEach

	// scales finds adaptive controllers (Config.Scales); unscaled is set
	// when a policy names one and scales is nil.
	scales   ScaleFunc
	unscaled bool
	// slots holds concurrency slots (Config.Slots); conc is set when a
	// rule has a concurrency policy.
	slots limit.Slots
	conc  bool
}

type compiledRule struct {
	name      string
	match     matcher
	key       []keyPart
	anonymous bool
	policies  []*compiledPolicy // nil for a tiered rule
	conc      []*compiledPolicy // its concurrency policies, apart
	tiers     *compiledTiers
	cost      compiledCost
	shadow    bool
	headers   bool // shown in headers
	maxDelay  time.Duration
	index     int  // position in Config.Rules
	tier      tier // consistency tier
	group     int  // index in Engine.groups
	// failClosed: the rule's failure mode (Config.OnErrorOf) is closed.
	failClosed bool
	// count is the rule's Rule.Count; nil when it charges at Decide.
	count *compiledCount
}

type compiledTiers struct {
	identity []keyPart // nil: the rule's key value
	members  map[string]*compiledPlan
	fallback *compiledPlan
	all      []*compiledPolicy // every plan's, plans in name order
}

type compiledPlan struct {
	name     string
	policies []*compiledPolicy
}

type compiledCost struct {
	fallback int64
	by       []compiledCostBy
}

type compiledCostBy struct {
	match matcher
	cost  int64
}

// ErrNoSlots reports a concurrency policy in an engine built without
// Config.Slots.
var ErrNoSlots = errors.New("rules: a concurrency policy needs Config.Slots")

// ErrStore wraps a store failure returned by Decide.
var ErrStore = errors.New("rate-limit store failed")

// New validates cfg and compiles it into an Engine that charges store. It
// reports every problem at once (see Config.Validate). The Engine keeps no
// reference to cfg's slices or maps.
func New(cfg Config, store limit.Store) (*Engine, error) {
	if store == nil {
		return nil, errors.New("rules: New: nil store")
	}
	e, ps := compile(&cfg)
	if len(ps) > 0 {
		return nil, errors.Join(ps...)
	}
	if err := e.checkScales(); err != nil {
		return nil, err
	}
	if e.conc && cfg.Slots == nil {
		return nil, ErrNoSlots
	}
	e.slots = cfg.Slots
	e.store = store
	if cfg.Stores != nil {
		if err := e.bindStores(&cfg); err != nil {
			return nil, err
		}
	}
	return e, nil
}
