package main

import (
	"strings"
	"testing"
	"time"
)

func TestValidateRefusesWhatTheLoopsCannotRunWith(t *testing.T) {
	good := options{duration: time.Minute, sampleEvery: time.Second, apps: 1, heldPerApp: 1, restartEvery: 1}
	if err := good.validate(); err != nil {
		t.Fatalf("the smallest usable options were refused: %v", err)
	}
	for _, tc := range []struct {
		flag string
		bad  func(*options)
	}{
		{"-restart-every", func(o *options) { o.restartEvery = 0 }},
		{"-apps", func(o *options) { o.apps = 0 }},
		{"-held-per-app", func(o *options) { o.heldPerApp = -1 }},
		{"-sample-every", func(o *options) { o.sampleEvery = 0 }},
		{"-duration", func(o *options) { o.duration = 0 }},
		{"-warmup-for", func(o *options) { o.warmupFor = -time.Second }},
	} {
		o := good
		tc.bad(&o)
		err := o.validate()
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s: got %v, want an error naming %s", tc.flag, err, tc.flag)
		}
	}
}
