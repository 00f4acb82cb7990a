package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"
)

// Recording a HAR with Chromium. Headless Chromium writes no HAR itself
// (DevTools' "Save all as HAR" is the DevTools front end's), so the test
// does what that front end does: it drives the browser over the DevTools
// protocol, on the pipe --remote-debugging-pipe opens (fds 3 and 4,
// messages ended by NUL: no port, nothing else can attach), collects the
// Network domain's events (webSocketCreated, webSocketWillSendHandshake
// Request, webSocketHandshakeResponseReceived, webSocketFrameSent and
// webSocketFrameReceived, webSocketClosed) and writes them in DevTools'
// HAR layout: the upgrade's entry with `_resourceType: "websocket"` and
// its frames as `_webSocketMessages`, each frame's time the handshake's
// wall clock plus the frame's offset from it, as DevTools' HARWriter
// computes it.

// cdpMsg is a DevTools protocol message: a command's answer (ID) or an
// event (Method).
type cdpMsg struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId"`
}

// cdp is a DevTools protocol session over Chromium's pipe.
type cdp struct {
	w      *os.File
	in     chan cdpMsg
	next   int
	events []cdpMsg
}

// startChromium starts headless Chromium with the DevTools pipe; it is
// killed when the test ends.
func startChromium(t *testing.T, bin string) *cdp {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	evR, evW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, evW} // fd 3: commands in, fd 4: answers and events out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	cmdR.Close()
	evW.Close()
	c := &cdp{w: cmdW, in: make(chan cdpMsg, 1024)}
	go func() {
		defer close(c.in)
		r := bufio.NewReader(evR)
		for {
			b, err := r.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMsg
			if json.Unmarshal(b[:len(b)-1], &m) == nil {
				c.in <- m
			}
		}
	}()
	t.Cleanup(func() {
		cmdW.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }() // its exit status is not the test's
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // the browser we started, by its pid
			<-done
		}
		cancel()
		evR.Close()
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", stderr.String())
		}
	})
	return c
}

// call sends a command and waits for its answer, keeping the events that
// come before it.
func (c *cdp) call(session, method string, params any) (json.RawMessage, error) {
	c.next++
	id := c.next
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return nil, err
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				return nil, errors.New("chromium closed the DevTools pipe")
			}
			if m.ID == 0 {
				c.events = append(c.events, m)
				continue
			}
			if m.ID != id {
				continue
			}
			if m.Error != nil {
				return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
			}
			return m.Result, nil
		case <-timeout:
			return nil, fmt.Errorf("%s: no answer in 30s", method)
		}
	}
}

// waitEvent keeps events until one named method arrives.
func (c *cdp) waitEvent(method string, d time.Duration) error {
	timeout := time.After(d)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				return errors.New("chromium closed the DevTools pipe")
			}
			if m.ID == 0 {
				c.events = append(c.events, m)
				if m.Method == method {
					return nil
				}
			}
		case <-timeout:
			return fmt.Errorf("no %s event in %s", method, d)
		}
	}
}

// recordHAR opens page in Chromium, waits for its WebSocket to close and
// returns the session as a HAR file.
func recordHAR(t *testing.T, bin, page string) []byte {
	t.Helper()
	c := startChromium(t, bin)
	res, err := c.call("", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	var target struct{ TargetID string }
	if err := json.Unmarshal(res, &target); err != nil {
		t.Fatal(err)
	}
	res, err = c.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		t.Fatal(err)
	}
	var att struct{ SessionID string }
	if err := json.Unmarshal(res, &att); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		method string
		params any
	}{{"Network.enable", map[string]any{}}, {"Page.enable", map[string]any{}}, {"Page.navigate", map[string]any{"url": page}}} {
		if _, err := c.call(att.SessionID, step.method, step.params); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.waitEvent("Network.webSocketClosed", time.Minute); err != nil {
		t.Fatalf("%v; events: %d", err, len(c.events))
	}
	if _, err := c.call("", "Browser.close", map[string]any{}); err != nil {
		t.Logf("Browser.close: %v", err)
	}
	b, err := buildHAR(c.events)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The DevTools protocol's events the HAR is built from (the fields read).
type (
	cdpHeaders  map[string]string
	cdpResponse struct {
		URL            string     `json:"url"`
		Status         int        `json:"status"`
		StatusText     string     `json:"statusText"`
		Headers        cdpHeaders `json:"headers"`
		MimeType       string     `json:"mimeType"`
		RequestHeaders cdpHeaders `json:"requestHeaders"`
		Protocol       string     `json:"protocol"`
	}
	cdpEvent struct {
		RequestID string      `json:"requestId"`
		URL       string      `json:"url"`
		Timestamp float64     `json:"timestamp"`
		WallTime  float64     `json:"wallTime"`
		Type      string      `json:"type"`
		Request   *cdpRequest `json:"request"`
		Response  cdpResponse `json:"response"`
	}
	cdpRequest struct {
		URL     string     `json:"url"`
		Method  string     `json:"method"`
		Headers cdpHeaders `json:"headers"`
	}
	cdpFrame struct {
		Opcode      int    `json:"opcode"`
		PayloadData string `json:"payloadData"`
	}
)

// harSocket is one WebSocket as the events told it.
type harSocket struct {
	url                string
	wall, start        float64 // the handshake's wall clock and monotonic time
	reqHeaders         cdpHeaders
	status             int
	statusText         string
	respHeaders        cdpHeaders
	messages           []map[string]any
	closedAt, lastTime float64
}

// buildHAR writes the events of one page load as DevTools would save
// them: the document's entry, then each WebSocket's.
func buildHAR(events []cdpMsg) ([]byte, error) {
	var entries []map[string]any
	sockets := map[string]*harSocket{}
	var order []string
	for _, m := range events {
		var e cdpEvent
		if err := json.Unmarshal(m.Params, &e); err != nil {
			continue
		}
		switch m.Method {
		case "Network.requestWillBeSent":
			if e.Type == "Document" && e.Request != nil {
				entries = append(entries, map[string]any{"startedDateTime": wallISO(e.WallTime), "_resourceType": "document", "time": 0,
					"request":  map[string]any{"method": e.Request.Method, "url": e.Request.URL, "httpVersion": "HTTP/1.1", "headers": harHeaders(e.Request.Headers), "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": 0},
					"response": map[string]any{"status": 0, "statusText": "", "httpVersion": "HTTP/1.1", "headers": []any{}, "cookies": []any{}, "content": map[string]any{"size": 0, "mimeType": "text/html"}, "redirectURL": "", "headersSize": -1, "bodySize": -1},
					"cache":    map[string]any{}, "timings": map[string]any{"send": 0, "wait": 0, "receive": 0}})
			}
		case "Network.responseReceived":
			if e.Type == "Document" && len(entries) > 0 {
				r := entries[len(entries)-1]["response"].(map[string]any)
				r["status"], r["statusText"], r["headers"] = e.Response.Status, e.Response.StatusText, harHeaders(e.Response.Headers)
			}
		case "Network.webSocketCreated":
			sockets[e.RequestID] = &harSocket{url: e.URL}
			order = append(order, e.RequestID)
		case "Network.webSocketWillSendHandshakeRequest":
			if s := sockets[e.RequestID]; s != nil && e.Request != nil {
				s.wall, s.start, s.reqHeaders = e.WallTime, e.Timestamp, e.Request.Headers
			}
		case "Network.webSocketHandshakeResponseReceived":
			if s := sockets[e.RequestID]; s != nil {
				s.status, s.statusText, s.respHeaders = e.Response.Status, e.Response.StatusText, e.Response.Headers
				if len(e.Response.RequestHeaders) > 0 { // what was sent, the Cookie header included
					s.reqHeaders = e.Response.RequestHeaders
				}
			}
		case "Network.webSocketFrameSent", "Network.webSocketFrameReceived":
			var f struct {
				Response cdpFrame `json:"response"`
			}
			s := sockets[e.RequestID]
			if s == nil || json.Unmarshal(m.Params, &f) != nil {
				continue
			}
			dir := "receive"
			if m.Method == "Network.webSocketFrameSent" {
				dir = "send"
			}
			s.messages = append(s.messages, map[string]any{"type": dir, "time": s.wall + (e.Timestamp - s.start), "opcode": f.Response.Opcode, "data": f.Response.PayloadData})
			s.lastTime = e.Timestamp
		case "Network.webSocketClosed":
			if s := sockets[e.RequestID]; s != nil {
				s.closedAt = e.Timestamp
			}
		}
	}
	for _, id := range order {
		entries = append(entries, sockets[id].entry())
	}
	return json.MarshalIndent(map[string]any{"log": map[string]any{
		"version": "1.2", "creator": map[string]any{"name": "WebInspector", "version": "537.36"},
		"pages": []any{}, "entries": entries,
	}}, "", "  ")
}

// entry is a WebSocket's HAR entry, in DevTools' layout.
func (s *harSocket) entry() map[string]any {
	var query, cookies []map[string]string
	if u, err := url.Parse(s.url); err == nil {
		for k, vs := range u.Query() {
			for _, v := range vs {
				query = append(query, map[string]string{"name": k, "value": v})
			}
		}
		sort.Slice(query, func(i, j int) bool { return query[i]["name"] < query[j]["name"] })
	}
	for k, v := range s.reqHeaders {
		if strings.EqualFold(k, "cookie") {
			for _, c := range strings.Split(v, ";") {
				if name, val, ok := strings.Cut(strings.TrimSpace(c), "="); ok {
					cookies = append(cookies, map[string]string{"name": name, "value": val})
				}
			}
		}
	}
	end := max(s.closedAt, s.lastTime)
	return map[string]any{
		"_resourceType":   "websocket",
		"startedDateTime": wallISO(s.wall),
		"time":            (end - s.start) * 1000,
		"request": map[string]any{"method": "GET", "url": s.url, "httpVersion": "HTTP/1.1", "headers": harHeaders(s.reqHeaders),
			"queryString": query, "cookies": cookies, "headersSize": -1, "bodySize": 0},
		"response": map[string]any{"status": s.status, "statusText": s.statusText, "httpVersion": "HTTP/1.1", "headers": harHeaders(s.respHeaders),
			"cookies": []any{}, "content": map[string]any{"size": 0, "mimeType": "x-unknown"}, "redirectURL": "", "headersSize": -1, "bodySize": 0, "_transferSize": 0},
		"cache":              map[string]any{},
		"timings":            map[string]any{"blocked": -1, "dns": -1, "ssl": -1, "connect": -1, "send": 0, "wait": 0, "receive": 0},
		"serverIPAddress":    "127.0.0.1",
		"_webSocketMessages": s.messages,
	}
}

// harHeaders writes the protocol's header object as HAR's list, by name.
func harHeaders(h cdpHeaders) []map[string]string {
	out := []map[string]string{}
	for k, v := range h {
		out = append(out, map[string]string{"name": k, "value": v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["name"] < out[j]["name"] })
	return out
}

func wallISO(wall float64) string {
	return time.UnixMilli(int64(wall * 1000)).UTC().Format("2006-01-02T15:04:05.000Z")
}
