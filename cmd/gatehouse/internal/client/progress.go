package client

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/schollz/progressbar/v3"
)

// NewRenderer returns how a task's events are shown: a progress bar with partial results
// on a terminal, one line per event in a pipe.
func (o *Output) NewRenderer(taskID string) Renderer {
	if o.TTY {
		return newBarRenderer(o, taskID)
	}
	return &lineRenderer{o: o}
}

// lineRenderer writes each event as one line on stdout: its name, a space, its data as
// compact JSON. Messages of the command itself go to stderr.
type lineRenderer struct{ o *Output }

func (l *lineRenderer) Event(e Event) {
	fmt.Fprintf(l.o.Out, "%s %s\n", e.Name, compact(e.Data))
}

func (l *lineRenderer) Cancelling(taskID string) {
	fmt.Fprintf(l.o.Err, "interrupted: cancelling task %s\n", taskID)
}

func (l *lineRenderer) Close(error) {}

// Task statuses the bar shows in their own colour.
const (
	statusCompleted = "completed"
	statusFailed    = "failed"
)

// barRenderer shows a task on a terminal: a progress bar on stderr (a spinner until the
// backend reports a total), each partial result printed above it, the status in its
// description; at the end the result, pretty, on stdout.
type barRenderer struct {
	o      *Output
	taskID string
	mu     sync.Mutex
	bar    *progressbar.ProgressBar
	known  bool // the bar has a total
	status string
}

func newBarRenderer(o *Output, taskID string) *barRenderer {
	r := &barRenderer{o: o, taskID: taskID, status: "pending"}
	r.bar = progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(o.Err),
		progressbar.OptionEnableColorCodes(o.Color),
		progressbar.OptionSetDescription(r.describe()),
		progressbar.OptionSetWidth(min(40, max(10, o.Width-50))),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(false),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetSpinnerChangeInterval(0), // drawn on each event only: no goroutine writing meanwhile
		progressbar.OptionSetTheme(progressbar.ThemeASCII),
	)
	return r
}

func (r *barRenderer) describe() string {
	colour := "cyan"
	switch r.status {
	case statusCompleted:
		colour = "green"
	case statusFailed, EventCancelled:
		colour = "red"
	case "suspended":
		colour = "yellow"
	}
	if !r.o.Color {
		return r.taskID + " " + r.status
	}
	return fmt.Sprintf("[bold]%s[reset] [%s]%s[reset]", r.taskID, colour, r.status)
}

// above prints a line above the bar.
func (r *barRenderer) above(w io.Writer, line string) {
	_ = r.bar.Clear()
	fmt.Fprintln(w, line)
	r.bar.Describe(r.describe()) // redraws
}

func (r *barRenderer) Event(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Name {
	case "status_change":
		var d struct {
			To     string `json:"to"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.To != "" {
			r.status = d.To
		}
		r.bar.Describe(r.describe())
	case "progress":
		var d struct {
			Processed float64 `json:"processed"`
			Total     float64 `json:"total"`
			Message   string  `json:"message"`
		}
		if json.Unmarshal(e.Data, &d) != nil {
			return
		}
		if d.Total > 0 {
			if !r.known || r.bar.GetMax64() != int64(d.Total) {
				r.bar.ChangeMax64(int64(d.Total))
				r.known = true
			}
			_ = r.bar.Set64(int64(min(d.Processed, d.Total)))
		} else {
			_ = r.bar.Add(1)
		}
		if d.Message != "" {
			r.above(r.o.Err, r.o.Colorize("[dim]  "+d.Message+"[reset]"))
		}
	case "partial":
		var d struct {
			Out json.RawMessage `json:"out"`
		}
		_ = json.Unmarshal(e.Data, &d)
		if !r.known {
			_ = r.bar.Add(1)
		}
		r.above(r.o.Out, r.o.Colorize("[blue]partial[reset] ")+compact(d.Out))
	case EventComplete:
		r.status = statusCompleted
		var d struct {
			Out  map[string]json.RawMessage `json:"out"`
			Meta struct {
				MS *int64 `json:"ms"`
			} `json:"meta"`
		}
		_ = json.Unmarshal(e.Data, &d)
		r.end()
		took := ""
		if d.Meta.MS != nil {
			took = fmt.Sprintf(" in %d ms", *d.Meta.MS)
		}
		fmt.Fprintln(r.o.Err, r.o.Colorize(fmt.Sprintf("[green]completed[reset] %s%s", r.taskID, took)))
		for _, level := range []string{"full", "compact", "minimal"} {
			if out, ok := d.Out[level]; ok {
				_ = r.o.JSON(out)
				break
			}
		}
	case EventError:
		r.status = statusFailed
		r.end() // the command prints the error as it ends
	case EventCancelled:
		r.status = EventCancelled
		var d struct {
			Reason   string `json:"reason"`
			Previous string `json:"previous_status"`
		}
		_ = json.Unmarshal(e.Data, &d)
		r.end()
		msg := fmt.Sprintf("[red]cancelled[reset] %s (was %s)", r.taskID, d.Previous)
		if d.Reason != "" {
			msg += ": " + d.Reason
		}
		fmt.Fprintln(r.o.Err, r.o.Colorize(msg))
	case "suspended", "resumed":
		r.status = e.Name
		r.bar.Describe(r.describe())
	default:
		r.above(r.o.Err, e.Name+" "+compact(e.Data))
	}
}

// end draws the bar a last time and leaves it on its line.
func (r *barRenderer) end() {
	r.bar.Describe(r.describe())
	if r.status == statusCompleted && r.known {
		_ = r.bar.Finish()
	}
	_ = r.bar.Exit()
	fmt.Fprintln(r.o.Err)
}

func (r *barRenderer) Cancelling(taskID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.above(r.o.Err, r.o.Colorize("[yellow]interrupted:[reset] cancelling task "+taskID))
}

func (r *barRenderer) Close(error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == statusCompleted || r.status == statusFailed || r.status == EventCancelled {
		return
	}
	// The stream ended some other way (refused, cut off): take the bar off the screen;
	// the command prints the error.
	_ = r.bar.Exit()
	_ = r.bar.Clear()
}

func compact(raw json.RawMessage) string {
	if len(raw) == 0 {
		return jsonNull
	}
	var buf []byte
	if b, err := compactBytes(raw); err == nil {
		buf = b
	} else {
		buf = raw
	}
	return string(buf)
}
