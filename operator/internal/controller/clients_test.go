package controller

import (
	"context"
	"errors"
	"sync"

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
type crashingClient struct {
	client.Client
	budget int
	writes int
	// dead is set by the first write refused: the operator died there,
	// whether or not the caller passed the error on.
	dead bool
}

func (c *crashingClient) write() error {
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
