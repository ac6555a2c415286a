package controller

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// interferingClient is the real client with another writer slipping in:
// before runs once right before the first scale subresource write,
// beforeStatus once right before the first status write.
type interferingClient struct {
	client.Client
	before, beforeStatus func()
	once, onceStatus     sync.Once
}

func (c *interferingClient) SubResource(name string) client.SubResourceClient {
	return &interferingSub{SubResourceClient: c.Client.SubResource(name), c: c}
}

func (c *interferingClient) Status() client.SubResourceWriter {
	return &interferingStatus{SubResourceWriter: c.Client.Status(), c: c}
}

type interferingSub struct {
	client.SubResourceClient
	c *interferingClient
}

func (s *interferingSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if s.c.before != nil {
		s.c.once.Do(s.c.before)
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

type interferingStatus struct {
	client.SubResourceWriter
	c *interferingClient
}

func (s *interferingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if s.c.beforeStatus != nil {
		s.c.onceStatus.Do(s.c.beforeStatus)
	}
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// errCrash stands for the operator dying: the write is not made.
var errCrash = errors.New("operator crashed before this write")

// crashingClient is the real client that makes the first budget writes and
// then "crashes": every later write fails with errCrash and is not made.
// A wake's status and scale go at once (patchStatusAndScale): with one
// write left, which of the two is made is up to the race, as in a crash.
type crashingClient struct {
	client.Client
	budget int
	mu     sync.Mutex
	writes int
	// dead is set by the first write refused: the operator died there,
	// whether or not the caller passed the error on.
	dead bool
}

func (c *crashingClient) write() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.budget >= 0 && c.writes >= c.budget {
		c.dead = true
		return errCrash
	}
	c.writes++
	return nil
}

func (c *crashingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Client.Create(ctx, obj, opts...)
}

func (c *crashingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Client.Update(ctx, obj, opts...)
}

func (c *crashingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c *crashingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if err := c.write(); err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *crashingClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *crashingClient) SubResource(name string) client.SubResourceClient {
	return &crashingSub{SubResourceClient: c.Client.SubResource(name), c: c}
}

type crashingSub struct {
	client.SubResourceClient
	c *crashingClient
}

func (s *crashingSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if err := s.c.write(); err != nil {
		return err
	}
	return s.SubResourceClient.Update(ctx, obj, opts...)
}

func (s *crashingSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if err := s.c.write(); err != nil {
		return err
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

// laggingCache is the real client whose Get of one object answers with an
// older copy of it, as an informer that has not caught up does.
type laggingCache struct {
	client.Client
	old *napwakev1alpha1.ManagedWorkload
}

func (c *laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if mw, ok := obj.(*napwakev1alpha1.ManagedWorkload); ok && key == client.ObjectKeyFromObject(c.old) {
		c.old.DeepCopyInto(mw)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// wakeSpy is the real client that counts live reads of the scale
// subresource and holds the first status write until a scale write is
// seen, for up to a few seconds: a status write made with the scale's
// at once passes at once, one made before it is marked alone.
type wakeSpy struct {
	client.Client
	scaleReads atomic.Int32
	scaled     chan struct{}
	once       sync.Once
	alone      atomic.Bool
}

func newWakeSpy(c client.Client) *wakeSpy { return &wakeSpy{Client: c, scaled: make(chan struct{})} }

func (c *wakeSpy) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *wakeSpy) SubResource(name string) client.SubResourceClient {
	return &wakeSpySub{SubResourceClient: c.Client.SubResource(name), c: c, name: name}
}

type wakeSpySub struct {
	client.SubResourceClient
	c    *wakeSpy
	name string
}

func (s *wakeSpySub) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	if s.name == "scale" {
		s.c.scaleReads.Add(1)
	}
	return s.SubResourceClient.Get(ctx, obj, sub, opts...)
}

func (s *wakeSpySub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	err := s.SubResourceClient.Update(ctx, obj, opts...)
	if s.name == "scale" && err == nil {
		s.c.once.Do(func() { close(s.c.scaled) })
	}
	return err
}

func (s *wakeSpySub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if s.name == "status" {
		select {
		case <-s.c.scaled:
		case <-time.After(3 * time.Second):
			s.c.alone.Store(true)
		}
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

// staleClient is the real client behind a cache that has not seen the
// latest writes to one object: Get of stale's key returns stale.
type staleClient struct {
	client.Client
	stale client.Object
}

func (c *staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if key == client.ObjectKeyFromObject(c.stale) && reflect.TypeOf(obj) == reflect.TypeOf(c.stale) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(c.stale.DeepCopyObject()).Elem())
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
