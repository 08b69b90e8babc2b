// Package chromium drives a real headless Chromium over the DevTools
// protocol on a pipe (--remote-debugging-pipe: commands on fd 3, replies and
// events on fd 4, each message JSON ended by a NUL byte), for tests that
// open a page in a browser: load it, read its DOM, take a screenshot and
// list every network request it made. It needs only the standard library.
package chromium

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Find is the path of a Chromium binary on PATH, or "".
func Find() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Browser is one headless Chromium with one page attached.
type Browser struct {
	cmd     *exec.Cmd
	in      *os.File // its fd 3
	out     *bufio.Reader
	outFile *os.File
	session string
	nextID  int
	timeout time.Duration

	mu       sync.Mutex
	requests []string // URLs of Network.requestWillBeSent, in order
	loaded   bool
}

// message is a DevTools protocol message: a command, a reply or an event.
type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    any             `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// Start starts the browser at bin with a blank page of width × height CSS
// pixels, its profile in dir.
func Start(bin, dir string, width, height int) (*Browser, error) {
	r3, w3, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("chromium: pipe: %w", err)
	}
	r4, w4, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("chromium: pipe: %w", err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
		"--disable-sync", "--disable-component-update", "--hide-scrollbars", "--user-data-dir="+dir, "about:blank")
	cmd.ExtraFiles = []*os.File{r3, w4} // fd 3: it reads; fd 4: it writes
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("chromium: start %s: %w", bin, err)
	}
	r3.Close()
	w4.Close()
	b := &Browser{cmd: cmd, in: w3, out: bufio.NewReader(r4), outFile: r4, timeout: 30 * time.Second}
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		b.Close()
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		b.Close()
		return nil, err
	}
	b.session = att.SessionID
	for _, m := range []string{"Page.enable", "Network.enable"} {
		if err := b.Call(m, nil, nil); err != nil {
			b.Close()
			return nil, err
		}
	}
	err = b.Call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Call sends a command to the page and decodes its result into v (nil:
// ignore it).
func (b *Browser) Call(method string, params, v any) error {
	return b.call(b.session, method, params, v)
}

func (b *Browser) call(session, method string, params, v any) error {
	b.nextID++
	id := b.nextID
	raw, err := json.Marshal(message{ID: id, Method: method, SessionID: session, Params: params})
	if err != nil {
		return fmt.Errorf("chromium: %s: %w", method, err)
	}
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return fmt.Errorf("chromium: send %s: %w", method, err)
	}
	deadline := time.Now().Add(b.timeout)
	for {
		m, err := b.read(deadline)
		if err != nil {
			return fmt.Errorf("chromium: %s: %w", method, err)
		}
		if m.ID != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("chromium: %s: %s", method, m.Error.Message)
		}
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, v); err != nil {
			return fmt.Errorf("chromium: %s result: %w", method, err)
		}
		return nil
	}
}

// read reads the next message, noting the events the Browser keeps.
func (b *Browser) read(deadline time.Time) (message, error) {
	if err := b.outFile.SetReadDeadline(deadline); err != nil && !errors.Is(err, os.ErrNoDeadline) {
		return message{}, err
	}
	line, err := b.out.ReadBytes(0)
	if err != nil {
		return message{}, fmt.Errorf("read the pipe: %w", err)
	}
	var m message
	var ev struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line[:len(line)-1], &m); err != nil {
		return message{}, fmt.Errorf("bad message %q: %w", line, err)
	}
	_ = json.Unmarshal(line[:len(line)-1], &ev)
	b.note(m.Method, ev.Params)
	return m, nil
}

func (b *Browser) note(method string, params json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch method {
	case "Network.requestWillBeSent":
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		if json.Unmarshal(params, &p) == nil {
			b.requests = append(b.requests, p.Request.URL)
		}
	case "Page.loadEventFired":
		b.loaded = true
	}
}

// Open navigates to url and waits for its load event.
func (b *Browser) Open(url string) error {
	b.mu.Lock()
	b.loaded = false
	b.mu.Unlock()
	if err := b.Call("Page.navigate", map[string]any{"url": url}, nil); err != nil {
		return err
	}
	deadline := time.Now().Add(b.timeout)
	for {
		b.mu.Lock()
		done := b.loaded
		b.mu.Unlock()
		if done {
			return nil
		}
		if _, err := b.read(deadline); err != nil {
			return fmt.Errorf("chromium: wait for %s to load: %w", url, err)
		}
	}
}

// Eval evaluates a JavaScript expression in the page (through the
// protocol: the page itself needs no script) and decodes its value into v.
func (b *Browser) Eval(expr string, v any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := b.Call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("chromium: evaluate %q: %s", expr, r.Exception.Text)
	}
	if err := json.Unmarshal(r.Result.Value, v); err != nil {
		return fmt.Errorf("chromium: evaluate %q: %w", expr, err)
	}
	return nil
}

// Screenshot is a PNG of the whole page.
func (b *Browser) Screenshot() ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := b.Call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return nil, err
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return nil, fmt.Errorf("chromium: screenshot: %w", err)
	}
	return png, nil
}

// PDF prints the page as the browser would (print CSS applies).
func (b *Browser) PDF() ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := b.Call("Page.printToPDF", map[string]any{}, &r); err != nil {
		return nil, err
	}
	pdf, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return nil, fmt.Errorf("chromium: pdf: %w", err)
	}
	return pdf, nil
}

// Requests are the URLs of every request the page made since Start
// (Network.requestWillBeSent), the navigations included.
func (b *Browser) Requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// Close ends the browser.
func (b *Browser) Close() error {
	_ = b.call("", "Browser.close", nil, nil)
	b.in.Close()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
	return b.outFile.Close()
}
