package catalog

import "slices"

// kinship indexes partition and inheritance links by parent, so that an
// ALTER TABLE that recurses finds its children without walking every
// table: ten thousand ALTERs over ten thousand tables walked a hundred
// million map entries, half a minute under the race detector.
//
// The index may keep links that no longer hold (a detached partition, a
// dropped child, a name taken again): children checks each against the
// table. It must never miss one, so every link made is added, and a
// rename or a rollback, which move links in bulk, drop it whole.
type kinship map[QualName][]QualName

// children returns t's direct partitions and inheritance children, sorted.
func (a *applier) children(parent QualName) []*Table {
	if a.kin == nil {
		a.kin = kinship{}
		for q, t := range a.cat.tables {
			if t.PartitionOf != nil {
				a.kin[*t.PartitionOf] = append(a.kin[*t.PartitionOf], q)
			}
			for _, p := range t.Inherits {
				a.kin[p] = append(a.kin[p], q)
			}
		}
	}
	names := slices.Clone(a.kin[parent])
	slices.SortFunc(names, compareQual)
	names = slices.Compact(names)
	var out []*Table
	for _, q := range names {
		t := a.cat.tables[q]
		if t != nil && ((t.PartitionOf != nil && *t.PartitionOf == parent) || slices.Contains(t.Inherits, parent)) {
			out = append(out, t)
		}
	}
	return out
}

// link records a partition or inheritance link just made.
func (a *applier) link(parent, child QualName) {
	if a.kin != nil {
		a.kin[parent] = append(a.kin[parent], child)
	}
}

// forgetKinship drops the index after links moved in bulk.
func (a *applier) forgetKinship() { a.kin = nil }
