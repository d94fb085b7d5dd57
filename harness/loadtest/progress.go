package loadtest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Progress prints the live status of a run: on a terminal, one line
// rewritten a few times a second; otherwise a plain line every second, so
// that a log or CI output stays readable.
type Progress struct {
	w        io.Writer
	terminal bool
	every    time.Duration
	last     Sample // the sample of the previous print
	width    int    // of the line on screen, to blank it out
}

// NewProgress returns a display on w. mode is "auto" (a status line if w
// is a terminal, plain lines otherwise), "line", "plain" or "off" (nil).
func NewProgress(w io.Writer, mode string) (*Progress, error) {
	switch mode {
	case "off":
		return nil, nil
	case "line":
		return &Progress{w: w, terminal: true, every: 250 * time.Millisecond}, nil
	case "plain":
		return &Progress{w: w, every: time.Second}, nil
	case "auto":
		f, ok := w.(*os.File)
		if ok && IsTerminal(f) {
			return NewProgress(w, "line")
		}
		return NewProgress(w, "plain")
	}
	return nil, fmt.Errorf("progress %q: want auto, line, plain or off", mode)
}

// IsTerminal reports whether f is a character device (a terminal), which
// is the test the standard library allows without a terminal package.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update is called by the sampler with every sample; it prints when its
// period has passed.
func (p *Progress) update(s Sample, total time.Duration) {
	if time.Duration((s.T-p.last.T)*float64(time.Second)) < p.every {
		return
	}
	rate := 0.0
	if dt := s.T - p.last.T; dt > 0 {
		rate = float64(s.Completed-p.last.Completed) / dt
	}
	clock := fmt.Sprintf("%6.1fs / %.1fs", s.T, total.Seconds())
	if s.T > total.Seconds() {
		// Past the end, the run waits for its workers: the calls in
		// progress finish, and workers not yet run must run to return.
		clock = fmt.Sprintf("stopping: waiting for %s workers", group(s.Unfinished))
	}
	line := fmt.Sprintf("%s  %s req/s  in-flight %s  waiting %s  errors %s  backend failures %s",
		clock, group(int64(rate)), group(s.InFlight), group(s.Waiting),
		group(int64(s.Errors)), group(int64(s.Backend)))
	p.last = s
	p.show(line)
}

// show prints a status line: over the previous one on a terminal, as a
// line of its own otherwise.
func (p *Progress) show(line string) {
	if !p.terminal {
		fmt.Fprintln(p.w, line)
		return
	}
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// finish blanks the status line, so that the report starts clean.
func (p *Progress) finish() {
	if p.terminal && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
	}
}

// note prints a line of its own, blanking the status line first.
func (p *Progress) note(line string) {
	if p.terminal && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s", strings.Repeat(" ", p.width))
		p.width = 0
	}
	if p.terminal {
		fmt.Fprint(p.w, "\r")
	}
	fmt.Fprintln(p.w, line)
}
