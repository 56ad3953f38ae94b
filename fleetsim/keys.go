package fleetsim

// keyTable interns the keys the fleet has seen as small integers, for
// the per-key figures and the gossip tier's delta logs.
type keyTable struct {
	ids   map[string]int32
	names []string
}

func (t *keyTable) intern(key string) int32 {
	if id, ok := t.ids[key]; ok {
		return id
	}
	id := int32(len(t.names))
	t.ids[key] = id
	t.names = append(t.names, key)
	return id
}

// id returns key's id, if seen.
func (t *keyTable) id(key string) (int32, bool) {
	id, ok := t.ids[key]
	return id, ok
}
