package retrieve

import (
	"slices"
	"sort"
)

// hedge keeps the first h objects of the routed order and then takes,
// in turn, the next of tail (the same objects in the order the tail
// follows) and the next by score without routing, each once.
func hedge(routed []*object, h int, tail []*object) []*object {
	unrouted := slices.Clone(routed)
	sort.SliceStable(unrouted, func(i, j int) bool { return unrouted[i].base > unrouted[j].base })
	taken := make(map[*object]bool, len(routed))
	out := make([]*object, 0, len(routed))
	for _, o := range routed[:h] {
		taken[o] = true
		out = append(out, o)
	}
	next := func(list []*object, i *int) {
		for *i < len(list) && taken[list[*i]] {
			*i++
		}
		if *i < len(list) {
			taken[list[*i]] = true
			out = append(out, list[*i])
		}
	}
	ti, ui := 0, 0
	for len(out) < len(routed) {
		next(tail, &ti)
		next(unrouted, &ui)
	}
	return out
}

// hedge keeps the routed order for the head only. The tail follows the
// routed order, or the fused ranking's when the routing features put
// another schema first: their bet is on the head.
func (p *run) hedge() {
	h := p.cfg.Route.Head
	if h <= 0 || !p.cfg.Route.Enabled || len(p.all) <= h {
		return
	}
	tail := p.all
	if slices.ContainsFunc(p.all, func(o *object) bool { return o.tailRank != o.schemaRank }) {
		score := func(o *object) float64 {
			return o.rrf - p.r.routingBonus(o.schemaRank) + p.r.routingBonus(o.tailRank)
		}
		tail = slices.Clone(p.all)
		sort.SliceStable(tail, func(i, j int) bool { return score(tail[i]) > score(tail[j]) })
	}
	p.all = hedge(p.all, h, tail)
}
