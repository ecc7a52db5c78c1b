output "wakeups_url" {
  description = "The value of SLUICE_WAKEUPS."
  value       = "pubsub://${var.project_id}/${google_pubsub_topic.this.name}"
}

output "topic" {
  description = "The topic's name."
  value       = google_pubsub_topic.this.name
}

output "grants" {
  description = "The IAM grants, for depends_on."
  value = [
    google_pubsub_topic_iam_member.publisher.id,
    google_pubsub_topic_iam_member.subscriber.id,
    google_project_iam_member.subscriptions.id,
  ]
}
