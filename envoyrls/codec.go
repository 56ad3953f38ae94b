package envoyrls

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// vtMarshaler is a message with vtprotobuf's generated marshalling
// (go-control-plane generates it for RateLimitResponse): no reflection.
type vtMarshaler interface {
	SizeVT() int
	MarshalToSizedBufferVTStrict([]byte) (int, error)
}

// vtCodec is gRPC's proto codec, except that a response with vtprotobuf's
// marshalling is marshalled by it: the same bytes, without reflection
// (the reflective marshal was a sixth of a decision's gRPC cost).
type vtCodec struct{ proto encoding.CodecV2 }

func (c vtCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(vtMarshaler)
	if !ok {
		return c.proto.Marshal(v)
	}
	size := m.SizeVT()
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf := make([]byte, size)
		if _, err := m.MarshalToSizedBufferVTStrict(buf); err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	pool := mem.DefaultBufferPool()
	buf := pool.Get(size)
	if _, err := m.MarshalToSizedBufferVTStrict((*buf)[:size]); err != nil {
		pool.Put(buf)
		return nil, err
	}
	*buf = (*buf)[:size]
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

func (c vtCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func (c vtCodec) Name() string { return grpcproto.Name }

// ServerCodec is the gRPC server option of Register's services: gRPC's
// proto codec, marshalling the responses with vtprotobuf's generated code.
func ServerCodec() grpc.ServerOption {
	return grpc.ForceServerCodecV2(vtCodec{proto: encoding.GetCodecV2(grpcproto.Name)})
}
