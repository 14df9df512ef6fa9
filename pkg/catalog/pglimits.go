package catalog

// PostgreSQL's own limits, which the catalog enforces as the server does.
// Past them the work one statement costs grows with the square of its
// size (a megabyte of CREATE TABLE with 100,000 columns took 16 s, a
// CREATE INDEX of as many elements minutes), and PostgreSQL refuses the
// statement anyway.
const (
	maxTableColumns = 1600 // MaxHeapAttributeNumber
	maxIndexColumns = 32   // INDEX_MAX_KEYS: keys, foreign keys, indexes
	maxTargetList   = 1664 // MaxTupleAttributeNumber: a query's columns
)

// targetList refuses a query of more columns than PostgreSQL returns.
func targetList(cols []*Column) error {
	if len(cols) > maxTargetList {
		return invalid("target lists can have at most %d entries", maxTargetList)
	}
	return nil
}

// maxTableNames bounds a table's constraints and indexes together.
// PostgreSQL has no such bound, but every name is checked against the
// others, so the work of a table grows with the square of their number:
// 4,000 unnamed checks in 60 KB of SQL cost 1.5 s, and a megabyte could
// hold 66,000. Real tables hold tens.
const maxTableNames = 1000

// roomForName refuses a constraint or index past maxTableNames.
func (t *Table) roomForName() error {
	n := len(t.Unique) + len(t.ForeignKeys) + len(t.Checks) + len(t.Indexes)
	if t.PrimaryKey != nil {
		n++
	}
	if n >= maxTableNames {
		return invalid("%s holds %d constraints and indexes, schemaq's bound (PostgreSQL has none; each name is checked against the others)", t.QualName(), maxTableNames)
	}
	return nil
}

// appendColumn adds c as t's last column, within PostgreSQL's bound.
func (t *Table) appendColumn(c *Column) error {
	if len(t.Columns) >= maxTableColumns {
		return invalid("tables can have at most %d columns (%s)", maxTableColumns, t.QualName())
	}
	t.Columns = append(t.Columns, c)
	return nil
}

// indexColumns refuses an index, key or exclusion constraint of more
// columns than PostgreSQL indexes.
func indexColumns(n int) error {
	if n > maxIndexColumns {
		return invalid("cannot use more than %d columns in an index", maxIndexColumns)
	}
	return nil
}
