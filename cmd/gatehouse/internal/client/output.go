package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mitchellh/colorstring"
	"golang.org/x/term"
)

// Mode says whether output goes to a terminal.
type Mode string

// The --tty values.
const (
	ModeAuto   Mode = "auto"   // look at stdout
	ModeAlways Mode = "always" // as on a terminal (progress bar, tables, pretty JSON)
	ModeNever  Mode = "never"  // as in a pipe (event lines, compact JSON)
)

// Output is where a command writes, and how.
type Output struct {
	Out io.Writer // results
	Err io.Writer // progress, errors
	// TTY: stdout is a terminal — pretty JSON, tables, a progress bar on stderr.
	TTY bool
	// Color: colour codes may be written (TTY, and NO_COLOR is not set).
	Color bool
	// Width of the terminal in columns (80 when unknown).
	Width int
}

// NewOutput looks at out (a *os.File on a terminal, or anything else) as mode says;
// noColor is true when NO_COLOR is set or --no-color given.
func NewOutput(out, errw io.Writer, mode Mode, noColor bool) (*Output, error) {
	o := &Output{Out: out, Err: errw, Width: 80}
	f, isFile := out.(*os.File)
	switch mode {
	case ModeAuto, "":
		o.TTY = isFile && term.IsTerminal(int(f.Fd()))
	case ModeAlways:
		o.TTY = true
	case ModeNever:
	default:
		return nil, Usagef("--tty must be auto, always or never, not %q", mode)
	}
	if isFile && o.TTY {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			o.Width = w
		}
	}
	o.Color = o.TTY && !noColor
	return o, nil
}

// Colorize applies colorstring codes ("[green]ok[reset]") on a colour terminal and strips
// them elsewhere.
func (o *Output) Colorize(s string) string {
	return (&colorstring.Colorize{Colors: colorstring.DefaultColors, Disable: !o.Color, Reset: o.Color}).Color(s)
}

// JSON writes v's JSON: indented on a terminal, one compact line in a pipe.
func (o *Output) JSON(raw json.RawMessage) error {
	var buf bytes.Buffer
	var err error
	if o.TTY {
		err = json.Indent(&buf, raw, "", "  ")
	} else {
		err = json.Compact(&buf, raw)
	}
	if err != nil {
		buf.Reset()
		buf.Write(raw)
	}
	buf.WriteByte('\n')
	_, err = o.Out.Write(buf.Bytes())
	return err
}

// Value writes v as JSON (see JSON).
func (o *Output) Value(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return o.JSON(b)
}

// Error writes err on stderr ("gatehouse: …", red on a colour terminal).
func (o *Output) Error(err error) {
	fmt.Fprintln(o.Err, o.Colorize("[red]gatehouse:[reset] ")+err.Error())
}

// Table writes rows under header, columns aligned; cells are cut to fit the terminal's
// width when the last column is long.
func (o *Output) Table(header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(o.Out, 0, 8, 2, ' ', 0)
	widths := make([]int, len(header))
	for _, r := range append([][]string{header}, rows...) {
		for i, c := range r[:len(r)-1] {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	used := 0
	for _, w := range widths[:len(widths)-1] {
		used += w + 2
	}
	room := max(o.Width-used, 20)
	write := func(r []string) {
		cells := slices.Clone(r)
		last := []rune(cells[len(cells)-1])
		if len(last) > room {
			cells[len(cells)-1] = string(last[:room-1]) + "…"
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	write(header)
	for _, r := range rows {
		write(r)
	}
	return tw.Flush()
}

func compactBytes(raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	err := json.Compact(&buf, raw)
	return buf.Bytes(), err
}
