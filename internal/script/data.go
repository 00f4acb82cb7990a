package script

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Data is where users' rows come from: each user takes one row of File.
type Data struct {
	File  string `yaml:"file" json:"file" required:"true" doc:"a CSV file (its first line names the columns) or JSON Lines (.jsonl, one object a line); relative to the plan"`
	Order Order  `yaml:"order" json:"order,omitempty" default:"sequential" doc:"which row a user takes: sequential (user i takes row i mod rows), random, unique (row i; fewer rows than users is an error)"`
}

// Order is which row a user takes (Data.Order).
type Order string

// Orders of Data.
const (
	OrderSequential = "sequential"
	OrderRandom     = "random"
	OrderUnique     = "unique"
)

// Orders lists the orders, the default first.
var Orders = []string{OrderSequential, OrderRandom, OrderUnique}

// Values implements decl.Enum.
func (Order) Values() []string { return Orders }

// Rows are a data file's rows: Values[i][j] is row i's column j. They
// cross to shards as JSON, so a shard needs no file.
type Rows struct {
	Columns []string   `json:"columns"`
	Values  [][]string `json:"values"`
	// First is the number of the first row held (a part of a file sent
	// to a shard); Total the rows of the whole file.
	First int `json:"first,omitempty"`
	Total int `json:"total"`
}

// A data file's limits, checked as it is read: a file past one fails the
// plan's load before the file is read whole (/dev/zero fails at once).
const (
	// MaxDataBytes bounds a data file's size.
	MaxDataBytes = 64 << 20
	// MaxLineBytes bounds a line of a data file (a row, the header).
	MaxLineBytes = 64 << 10
	// MaxRows bounds a data file's rows.
	MaxRows = 1_000_000
)

// ReadRows reads a data file: JSON Lines when its name ends in .jsonl or
// .ndjson, else CSV with a header line.
func ReadRows(path string) (*Rows, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() > MaxDataBytes {
		return nil, fmt.Errorf("%s: %w", path, errDataSize)
	}
	if r := lastRead.get(path, st); r != nil {
		return r, nil
	}
	in := &limitReader{r: f}
	ext := strings.ToLower(filepath.Ext(path))
	var r *Rows
	if ext == ".jsonl" || ext == ".ndjson" {
		r, err = readJSONL(in)
	} else {
		r, err = readCSV(in)
	}
	if in.err != nil {
		err = in.err // what the reader saw of it is cut short
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Values) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	r.Total = len(r.Values)
	lastRead.put(path, st, r)
	return r, nil
}

// lastRead keeps the rows of the regular file read last, unchanged since
// (same size and time): a plan with a matrix is loaded once per
// combination, each load reading the same file. Rows are never modified
// once read.
var lastRead rowsCache

type rowsCache struct {
	mu   sync.Mutex
	path string
	size int64
	mod  time.Time
	rows *Rows
}

func (c *rowsCache) get(path string, st os.FileInfo) *Rows {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rows == nil || c.path != path || c.size != st.Size() || !c.mod.Equal(st.ModTime()) {
		return nil
	}
	return c.rows
}

func (c *rowsCache) put(path string, st os.FileInfo, r *Rows) {
	if !st.Mode().IsRegular() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.path, c.size, c.mod, c.rows = path, st.Size(), st.ModTime(), r
}

func readCSV(f io.Reader) (*Rows, error) {
	cr := csv.NewReader(f)
	cr.ReuseRecord = false
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the header line: %w", err)
	}
	r := &Rows{Columns: head}
	if err := checkColumns(head); err != nil {
		return nil, err
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return nil, err
		}
		if len(r.Values) == MaxRows {
			return nil, fmt.Errorf("more than %d rows", MaxRows)
		}
		r.Values = append(r.Values, rec)
	}
}

func readJSONL(f io.Reader) (*Rows, error) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4<<10), MaxLineBytes+2) // the line, \r\n
	r := &Rows{}
	index := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("line %d: want a JSON object: %w", line, err)
		}
		if len(r.Values) == 0 {
			r.Columns = orderedKeys(b)
			for i, c := range r.Columns {
				index[c] = i
			}
			if err := checkColumns(r.Columns); err != nil {
				return nil, err
			}
		}
		row := make([]string, len(r.Columns))
		for k, v := range obj {
			i, ok := index[k]
			if !ok {
				return nil, fmt.Errorf("line %d: key %q is not in the first line's keys (%s)", line, k, strings.Join(r.Columns, ", "))
			}
			var s string
			if json.Unmarshal(v, &s) == nil {
				row[i] = s
			} else {
				row[i] = string(v) // numbers, booleans, objects: as written
			}
		}
		if len(r.Values) == MaxRows {
			return nil, fmt.Errorf("more than %d rows", MaxRows)
		}
		r.Values = append(r.Values, row)
	}
	return r, sc.Err()
}

var (
	errDataSize = fmt.Errorf("larger than %d bytes (%d MiB): a data file's limit", MaxDataBytes, MaxDataBytes>>20)
	errDataLine = fmt.Errorf("a line longer than %d bytes (%d KiB): a data file's limit", MaxLineBytes, MaxLineBytes>>10)
)

// limitReader reads a data file up to its limits: at the first byte past
// MaxDataBytes, or past MaxLineBytes since the last line break, it fails
// with err.
type limitReader struct {
	r     io.Reader
	total int64
	line  int // bytes since the last \n
	err   error
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	l.total += int64(n)
	for b := p[:n]; len(b) > 0; {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.line += len(b)
			break
		}
		l.line += i
		if l.line > MaxLineBytes+1 { // +1: a \r before the \n
			break
		}
		l.line, b = 0, b[i+1:]
	}
	switch {
	case l.total > MaxDataBytes:
		l.err = errDataSize
	case l.line > MaxLineBytes+1:
		l.err = errDataLine
	}
	if l.err != nil {
		return 0, l.err
	}
	return n, err
}

// orderedKeys returns an object's keys in the order they are written.
func orderedKeys(obj []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(obj))
	var keys []string
	depth := 0
	expectKey := false
	for {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
				expectKey = v == '{' && depth == 1
				continue
			case '}', ']':
				depth--
			}
		case string:
			if depth == 1 && expectKey {
				keys = append(keys, v)
				expectKey = false
				continue
			}
		}
		if depth == 1 {
			expectKey = true
		}
	}
}

func checkColumns(cols []string) error {
	seen := map[string]bool{}
	for _, c := range cols {
		if c == "" {
			return fmt.Errorf("an empty column name")
		}
		if seen[c] {
			return fmt.Errorf("column %q twice", c)
		}
		seen[c] = true
	}
	return nil
}

// Index returns the row user takes (a row number of the whole file), by
// order; seed varies the random order between runs of the same plan.
func Index(order string, user int64, total int, seed uint64) int {
	switch order {
	case OrderRandom:
		return int(mix(uint64(user)^seed) % uint64(total))
	default: // sequential; unique is sequential with enough rows
		return int(user % int64(total))
	}
}

// mix is splitmix64's finaliser: a fixed, well spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Part returns the rows users [first, first+n) take (every row when the
// order is random), for one shard or loop; the result's First says which
// row its first is.
func (r *Rows) Part(order string, first, n int64) *Rows {
	if order == OrderRandom || n >= int64(r.Total) || r.First != 0 || len(r.Values) != r.Total {
		return r
	}
	lo := int(first % int64(r.Total))
	if lo+int(n) <= r.Total {
		return &Rows{Columns: r.Columns, Values: r.Values[lo : lo+int(n)], First: lo, Total: r.Total}
	}
	return r // wraps around the end: keep every row
}

// Row returns row i (a row number of the whole file) as bytes, or nil if
// this part does not hold it.
func (r *Rows) Row(i int) []string {
	j := i - r.First
	if j < 0 || j >= len(r.Values) {
		return nil
	}
	return r.Values[j]
}
