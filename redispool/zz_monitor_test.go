package redispool

import (
	"os"
	"strconv"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestZZCost(t *testing.T) {
	if os.Getenv("ZZN") == "" {
		t.Skip()
	}
	c, _ := hooked(t, testAddr)
	p := newPool(t, c, Options{})
	add(t, p, Resource{ID: "a"})
	mustRelease(t, mustAcquire(t, p))
	ctx := context.Background()
		cpu0, _ := c.Info(ctx, "cpu").Result()
	start := time.Now()
	n, _ := strconv.Atoi(os.Getenv("ZZN"))
	for range n {
		l, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mustRelease(t, l)
	}
	el := time.Since(start)
	cpu1, _ := c.Info(ctx, "cpu").Result()
	st, _ := c.Info(ctx, "commandstats").Result()
	fmt.Println(el/time.Duration(n), "per cycle", "CPUUS", cpuUS(cpu1)-cpuUS(cpu0))
	for _, l := range strings.Split(st, "\n") {
		if strings.Contains(l, "fcall") {
			fmt.Println(l)
		}
	}
	fmt.Println(cpuLine(cpu0), cpuLine(cpu1))
	for _, k := range p.keys {
		typ, _ := c.Type(ctx, k).Result()
		enc, _ := c.ObjectEncoding(ctx, k).Result()
		var n int64
		switch typ {
		case "hash":
			n, _ = c.HLen(ctx, k).Result()
		case "zset":
			n, _ = c.ZCard(ctx, k).Result()
		}
		fmt.Println(k, typ, enc, n)
	}
}

func cpuLine(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "used_cpu_sys:") || strings.HasPrefix(l, "used_cpu_user:") {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return strings.Join(out, " ")
}

func cpuUS(s string) float64 {
	var t float64
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(l, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				t += f
			}
		}
	}
	return t * 1e6
}
