package fleethost

import "slices"

// index maps a key (an owner UID, a secret name) to a sorted set of names,
// as a Kubernetes host's informer indexers do. Nearly every key has one
// name, so those are held as a plain string: a slice per key would cost
// an allocation and a wider map entry for each certificate.
type index struct {
	one  map[string]string   // keys with exactly one name
	many map[string][]string // keys with two or more, sorted
}

func newIndex() *index {
	return &index{one: map[string]string{}, many: map[string][]string{}}
}

// get returns key's names in order. one is the caller's buffer for the
// common single name, so the lookup does not allocate.
func (x *index) get(key string, one *[1]string) []string {
	if n, ok := x.one[key]; ok {
		one[0] = n
		return one[:]
	}
	return x.many[key]
}

func (x *index) add(key, name string) {
	if list, ok := x.many[key]; ok {
		if i, found := slices.BinarySearch(list, name); !found {
			x.many[key] = slices.Insert(list, i, name)
		}
		return
	}
	n, ok := x.one[key]
	switch {
	case !ok:
		x.one[key] = name
	case n != name:
		delete(x.one, key)
		x.many[key] = []string{min(n, name), max(n, name)}
	}
}

func (x *index) remove(key, name string) {
	if n, ok := x.one[key]; ok {
		if n == name {
			delete(x.one, key)
		}
		return
	}
	list := x.many[key]
	i, found := slices.BinarySearch(list, name)
	if !found {
		return
	}
	list = slices.Delete(list, i, i+1)
	if len(list) == 1 {
		delete(x.many, key)
		x.one[key] = list[0]
		return
	}
	x.many[key] = slices.Clip(list)
}
