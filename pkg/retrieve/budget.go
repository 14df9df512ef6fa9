package retrieve

import "fmt"

// EstimateTokens approximates a text's token count for budgeting (about
// four bytes a token for English and SQL).
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// budget keeps items in order while their chunks fit in limit tokens
// (none: no limit) and says how many tokens the kept ones take; the
// first item is always kept.
func budget(items []Item, limit int) ([]Item, int) {
	if limit <= 0 {
		return items, 0
	}
	used := 0
	for i, it := range items {
		n := EstimateTokens(it.Text)
		if i > 0 && used+n > limit {
			return items[:i], used
		}
		used += n
	}
	return items, used
}

// budgetJoins keeps joins in order while their lines fit in limit tokens.
func budgetJoins(joins []InferredJoin, limit int) []InferredJoin {
	used := 0
	for i, j := range joins {
		// A line of the prompt's section, "a.b = c.d", and its newline.
		n := EstimateTokens(j.String()) + 1
		if used+n > limit {
			return joins[:i]
		}
		used += n
	}
	return joins
}

// budget keeps what fits the token budget, with the joins the names
// imply among the items kept.
func (p *run) budget() {
	res := p.res
	found := len(p.items)
	items, used := budget(p.items, p.cfg.TokenBudget)
	res.Items = items
	if p.cfg.Propagate.InferJoins && p.cat != nil {
		res.Joins = p.r.graphs.get(p.cat).joinsAmong(items)
	}
	if p.cfg.TokenBudget <= 0 {
		return
	}
	// The prompt shows the joins after the schema, so they spend the same
	// budget; the tables they join come first.
	joins := len(res.Joins)
	res.Joins = budgetJoins(res.Joins, p.cfg.TokenBudget-used)
	if len(items) < found || len(res.Joins) < joins {
		res.Truncated = true
		w := fmt.Sprintf("the token budget of %d kept %d of %d results", p.cfg.TokenBudget, len(items), found)
		if len(res.Joins) < joins {
			w += fmt.Sprintf(" and %d of %d inferred joins", len(res.Joins), joins)
		}
		res.Warnings = append(res.Warnings, w)
	}
}
