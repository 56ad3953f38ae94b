package rules

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// LoadPlanMap reads a plan map file: one "IDENTITY PLAN" pair per line,
// separated by spaces or tabs; blank lines and lines starting with '#'
// are ignored. A file whose name ends in .json is instead a JSON object
// mapping identity to plan name. A repeated identity is an error. Errors
// name the line, never the identity (it may be a secret).
func LoadPlanMap(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	if strings.HasSuffix(path, ".json") {
		if err := json.NewDecoder(f).Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return m, nil
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		fields := strings.Fields(s)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want IDENTITY PLAN, found %d fields", path, line, len(fields))
		}
		if _, dup := m[fields[0]]; dup {
			return nil, fmt.Errorf("%s:%d: identity repeated", path, line)
		}
		m[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
