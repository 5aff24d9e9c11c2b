package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of routes whose topic is computed per record (topic_from).
const (
	// NameComputedTopicRecords counts the records a topic_from route
	// wrote, by route and computed topic, committed. A route's first
	// MaxComputedTopicSeries topics get a series each; the records of
	// any further topic count under topic="(other)", a name no Kafka
	// topic can have, so the series stay bounded whatever the data.
	NameComputedTopicRecords = "sidestream_computed_topic_records_total"
	// NameComputedTopicsCreated counts the computed topics the router
	// created (missing: create), by route.
	NameComputedTopicsCreated = "sidestream_computed_topics_created_total"
)

// MaxComputedTopicSeries bounds the topic series of one route in
// NameComputedTopicRecords.
const MaxComputedTopicSeries = 100

// OtherTopic is the topic label of the records past the bound.
const OtherTopic = "(other)"

// computedMetrics are the collectors of computed topics and the topics
// each route has a series for.
type computedMetrics struct {
	ComputedTopicRecords *prometheus.CounterVec // route, topic
	ComputedTopicsCreate *prometheus.CounterVec // route

	seriesMu sync.Mutex
	series   map[string]map[string]bool // route -> topics with a series
}

func newComputedMetrics(r *prometheus.Registry) *computedMetrics {
	c := &computedMetrics{
		ComputedTopicRecords: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameComputedTopicRecords,
			Help: "Records written by routes whose topic is computed per record, by route and topic; past 100 topics of a route, topic=\"(other)\"."}, []string{"route", "topic"}),
		ComputedTopicsCreate: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameComputedTopicsCreated,
			Help: "Computed topics the router created (topic_from.missing: create), by route."}, []string{"route"}),
		series: map[string]map[string]bool{},
	}
	r.MustRegister(c.ComputedTopicRecords, c.ComputedTopicsCreate)
	return c
}

// AddComputedTopic counts one record route wrote to its computed topic.
func (t *Tally) AddComputedTopic(route, topic string) {
	if t.ComputedTopics == nil {
		t.ComputedTopics = map[[2]string]int{}
	}
	t.ComputedTopics[[2]string{route, topic}]++
}

// topicLabel is topic's label under route: itself while the route has
// fewer than MaxComputedTopicSeries series, else OtherTopic.
func (c *computedMetrics) topicLabel(route, topic string) string {
	c.seriesMu.Lock()
	defer c.seriesMu.Unlock()
	s := c.series[route]
	if s == nil {
		s = map[string]bool{}
		c.series[route] = s
	}
	if s[topic] {
		return topic
	}
	if len(s) >= MaxComputedTopicSeries {
		return OtherTopic
	}
	s[topic] = true
	return topic
}

func (c *computedMetrics) observeComputed(t *Tally) {
	for k, v := range t.ComputedTopics {
		c.ComputedTopicRecords.WithLabelValues(k[0], c.topicLabel(k[0], k[1])).Add(float64(v))
	}
}

// TopicCreated counts a computed topic route created.
func (m *Metrics) TopicCreated(route string) { m.ComputedTopicsCreate.WithLabelValues(route).Inc() }
