/* SpecC's standard channels on the kernel's events: c_handshake,
 * c_double_handshake and c_queue. Their state is shared between the
 * threads at both ends, so every operation holds the kernel lock
 * (parallel mode), which waiting releases. */
#include "sim/kernel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int wsim_handshake_send(wsim_handshake_t *c)
{
	if (!c)
		return EINVAL;
	if (!wsim_self_checked())
		return EPERM;
	wsim_klock();
	c->flag_ = 1;
	wsim_notify_locked(&c->e);
	wsim_kunlock();
	return 0;
}

int wsim_handshake_receive(wsim_handshake_t *c)
{
	if (!c)
		return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_klock();
	while (!c->flag_) {
		wsim_wait_locked(self, &c->e);
		wsim_klock();
	}
	c->flag_ = 0;
	wsim_kunlock();
	return 0;
}

/* The sender publishes its data and waits for the acknowledgement in one
 * critical section, so the receiver's ack cannot come before the wait. */
int wsim_dhs_send(wsim_double_handshake_t *c, const void *d, size_t size)
{
	if (!c || (!d && size))
		return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_klock();
	c->data_ = d;
	c->size_ = size;
	c->valid_ = 1;
	c->result_ = 0;
	if (wsim_event_waited(&c->req_))
		wsim_notify_locked(&c->req_);
	wsim_wait_locked(self, &c->ack_);
	wsim_klock();
	int r = c->result_;
	wsim_kunlock();
	return r;
}

int wsim_dhs_receive(wsim_double_handshake_t *c, void *d, size_t size)
{
	if (!c || (!d && size))
		return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_klock();
	while (!c->valid_) {
		wsim_wait_locked(self, &c->req_);
		wsim_klock();
	}
	int r = 0;
	if (c->size_ != size)
		r = c->result_ = EINVAL;
	else if (size)
		memcpy(d, c->data_, size);
	c->valid_ = 0;
	wsim_notify_locked(&c->ack_);
	wsim_kunlock();
	return r;
}

int wsim_queue_init(wsim_queue_t *q, size_t cap, size_t elem_size)
{
	if (!q || !cap || !elem_size || cap > SIZE_MAX / elem_size)
		return EINVAL;
	memset(q, 0, sizeof *q);
	if (!(q->buf_ = malloc(cap * elem_size)))
		return ENOMEM;
	q->cap_ = cap;
	q->elem_ = elem_size;
	return 0;
}

int wsim_queue_destroy(wsim_queue_t *q)
{
	if (!q || !q->buf_)
		return EINVAL;
	if (wsim_event_waited(&q->not_full_) || wsim_event_waited(&q->not_empty_))
		return EBUSY;
	free(q->buf_);
	q->buf_ = NULL;
	return 0;
}

int wsim_queue_send(wsim_queue_t *q, const void *d)
{
	if (!q || !q->buf_ || !d)
		return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_klock();
	while (q->n_ == q->cap_) {
		wsim_wait_locked(self, &q->not_full_);
		wsim_klock();
	}
	memcpy(q->buf_ + ((q->head_ + q->n_) % q->cap_) * q->elem_, d, q->elem_);
	q->n_++;
	if (wsim_event_waited(&q->not_empty_))
		wsim_notify_locked(&q->not_empty_);
	wsim_kunlock();
	return 0;
}

int wsim_queue_receive(wsim_queue_t *q, void *d)
{
	if (!q || !q->buf_ || !d)
		return EINVAL;
	wsim_thread_t *self = wsim_self_checked();
	if (!self)
		return EPERM;
	wsim_klock();
	while (q->n_ == 0) {
		wsim_wait_locked(self, &q->not_empty_);
		wsim_klock();
	}
	memcpy(d, q->buf_ + q->head_ * q->elem_, q->elem_);
	q->head_ = (q->head_ + 1) % q->cap_;
	q->n_--;
	if (wsim_event_waited(&q->not_full_))
		wsim_notify_locked(&q->not_full_);
	wsim_kunlock();
	return 0;
}
