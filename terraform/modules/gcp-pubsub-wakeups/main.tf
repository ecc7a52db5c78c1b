# Pub/Sub wake-ups (SLUICE_WAKEUPS=pubsub://PROJECT/TOPIC): one topic per
# deployment, made here so that instances need not create topics; each
# instance creates a subscription of its own when it starts and deletes it
# when it stops (stores/wake/pubsub).
#
# What an instance calls, and the grant that allows it:
#   Publish                       roles/pubsub.publisher on the topic
#   CreateSubscription (on topic) roles/pubsub.subscriber on the topic
#                                 (pubsub.topics.attachSubscription)
#   CreateSubscription, pull, ack a custom project role with only
#   and DeleteSubscription        pubsub.subscriptions.{create,get,consume,delete}:
#                                 subscriptions are named at run time, so the
#                                 grant cannot be on them.

resource "google_pubsub_topic" "this" {
  project = var.project_id
  name    = var.topic
  # No topic retention: each subscription keeps its wake-ups for 10
  # minutes (set by sluice), and nothing replays the topic.
}

resource "google_pubsub_topic_iam_member" "publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.this.name
  role    = "roles/pubsub.publisher"
  member  = var.member
}

resource "google_pubsub_topic_iam_member" "subscriber" {
  project = var.project_id
  topic   = google_pubsub_topic.this.name
  role    = "roles/pubsub.subscriber"
  member  = var.member
}

resource "google_project_iam_custom_role" "subscriptions" {
  project     = var.project_id
  role_id     = substr("sluiceWakeSubscriptions_${replace(var.topic, "/[^A-Za-z0-9_]/", "_")}", 0, 64)
  title       = "sluice wake-up subscriptions (${var.topic})"
  description = "Create, read, pull from and delete the per-instance subscriptions of sluice's wake-up topic."
  permissions = [
    "pubsub.subscriptions.consume",
    "pubsub.subscriptions.create",
    "pubsub.subscriptions.delete",
    "pubsub.subscriptions.get",
  ]
}

resource "google_project_iam_member" "subscriptions" {
  project = var.project_id
  role    = google_project_iam_custom_role.subscriptions.name
  member  = var.member
}
