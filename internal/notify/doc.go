// Package notify sends a job's results to webhooks and commands: the
// failure notifications of cronlock's notify configuration.
//
// The daemon calls [Notifier.Notify] from scheduler.Options.OnResult, which
// the scheduler calls once for every result it records, on the replica that
// recorded it. So each event is sent once, by one replica; the Notifier
// itself keeps no shared state.
//
// [Events] maps a recorded status (and the job's previous status) to the
// events a target can subscribe to. For every target of the run's job whose
// on list has one of those events, one [Payload] is delivered, with the first
// such event: a target subscribed to both recovered and success receives one
// notification, with event "recovered", for a success that ends a failure.
//
// Delivery is asynchronous: Notify only queues, so it never delays the
// scheduler or another job. A fixed number of workers deliver from a bounded
// queue; when the queue is full the notification is dropped, logged and
// counted as failed. Each delivery is tried up to 1+Retries times, each try
// bounded by Timeout, with exponential backoff between tries. A notification
// that is not delivered is logged and counted in
// cronlock_notifications_failed_total{job}; delivered ones are counted in
// cronlock_notifications_sent_total{job}.
//
// It owns delivery (queue, retries, signatures, metrics). It must not know
// how results are recorded or shared between replicas: exactly-once comes
// from the scheduler calling OnResult once per recorded result.
package notify
