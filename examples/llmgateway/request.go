package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/crsched/crs/config"
)

// maxOutputTokens bounds max_tokens (and max_completion_tokens,
// max_output_tokens): far above any model's output, so that a larger
// figure is a mistake, refused before it takes any budget.
const maxOutputTokens = 1 << 20

// maxN bounds n, the completions a call asks for (OpenAI's own bound).
const maxN = 128

// readRequest reads a call's body, at most maxBody bytes, and checks it
// before any budget is taken: a POST whose body is a JSON object, with a
// non-empty "messages" array for chat completions, and max_tokens (or
// max_completion_tokens, max_output_tokens) and n, when given, whole
// numbers in range. It returns the status to answer with when not.
func readRequest(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return nil, http.StatusMethodNotAllowed, errors.New("only POST calls are proxied")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("a body above %d bytes", maxBody)
	case err != nil:
		return nil, http.StatusBadRequest, errors.New("an unreadable body")
	}
	if err := validate(r.URL.Path, body); err != nil {
		return nil, http.StatusBadRequest, err
	}
	return body, 0, nil
}

// validate checks a call's body (see readRequest).
func validate(path string, body []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return errors.New("the body is not a JSON object")
	}
	if strings.HasSuffix(strings.TrimRight(path, "/"), "/chat/completions") {
		var msgs []map[string]json.RawMessage
		if json.Unmarshal(fields["messages"], &msgs) != nil || len(msgs) == 0 {
			return errors.New(`"messages": want a non-empty array of messages`)
		}
	}
	for _, name := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens", "n"} {
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			continue
		}
		bound := int64(maxOutputTokens)
		if name == "n" {
			bound = maxN
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 1 || n > bound {
			return fmt.Errorf("%q: want a whole number from 1 to %d", name, bound)
		}
	}
	return nil
}

// estimate is what a call may spend, as OpenAI counts it before running
// it, and never less: the prompt's tokens plus max_tokens for each of
// the n completions asked for. The prompt's text counts a quarter of its
// bytes (a rule of thumb with no tokenizer); each image part counts
// imageTokens whatever its size, since a provider charges an image by
// its dimensions, not by its URL's length; any other part (audio, a
// file) counts a quarter of its JSON's bytes, far above what base64 data
// costs. Every other string, array or object of the body but the model
// counts a quarter of its JSON's bytes too: a completions "prompt", an
// "input", "tools", a response format are read by the model as well. A
// body that is not JSON is estimated at its size over 4 plus the default
// max_tokens. An estimate past config.MaxUnits is config.MaxUnits: more
// than any key's limit, so refused at once.
func estimate(body []byte, imageTokens int64) int64 {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		MaxTokens           int64 `json:"max_tokens"`
		MaxCompletionTokens int64 `json:"max_completion_tokens"`
		MaxOutputTokens     int64 `json:"max_output_tokens"`
		N                   int64 `json:"n"`
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &fields) != nil {
		return int64(len(body)+3)/4 + defaultMaxTokens
	}
	var prompt int64
	for _, m := range req.Messages {
		prompt = min(prompt+contentTokens(m.Content, imageTokens), config.MaxUnits)
	}
	for name, v := range fields {
		if name != "messages" && name != "model" && len(v) > 0 && strings.ContainsRune(`"[{`, rune(v[0])) {
			prompt = min(prompt+int64(len(v)+3)/4, config.MaxUnits)
		}
	}
	out := max(req.MaxTokens, req.MaxCompletionTokens, req.MaxOutputTokens)
	if out <= 0 {
		out = defaultMaxTokens
	}
	prompt, n := max(prompt, 1), max(req.N, 1)
	if prompt >= config.MaxUnits || out > (config.MaxUnits-prompt)/n {
		return config.MaxUnits
	}
	return prompt + out*n
}

// contentTokens estimates a message's content: a string, or an array of
// parts (see estimate). The sum saturates at config.MaxUnits.
func contentTokens(content json.RawMessage, imageTokens int64) int64 {
	var text string
	if json.Unmarshal(content, &text) == nil {
		return int64(len(text)+3) / 4
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return int64(len(content)+3) / 4
	}
	var raw []json.RawMessage
	_ = json.Unmarshal(content, &raw) // parses: parts did
	var n int64
	for i, p := range parts {
		switch p.Type {
		case "text":
			n += int64(len(p.Text)+3) / 4
		case "image_url", "input_image", "image":
			n += imageTokens
		default:
			n += int64(len(raw[i])+3) / 4
		}
		n = min(n, config.MaxUnits)
	}
	return n
}

// usageOf reads total_tokens from an answer's usage block; -1 if it has
// none.
func usageOf(body []byte) int64 {
	var v struct {
		Usage *struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if json.Unmarshal(body, &v) != nil || v.Usage == nil || v.Usage.TotalTokens < 0 {
		return -1
	}
	return v.Usage.TotalTokens
}

// retryAfter reads a 429's wait: retry-after-ms, then Retry-After in
// seconds; a second if it gives neither.
func retryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms > 0 && ms < 1e9 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	if s, err := strconv.ParseFloat(h.Get("Retry-After"), 64); err == nil && s > 0 && s < 1e6 {
		return time.Duration(s * float64(time.Second))
	}
	return time.Second
}
