variables {
  project_id = "sluice-test"
  member     = "serviceAccount:sluice@sluice-test.iam.gserviceaccount.com"
}

run "topic_and_narrow_grants" {
  command = plan

  assert {
    condition     = output.wakeups_url == "pubsub://sluice-test/sluice-wake"
    error_message = "SLUICE_WAKEUPS is pubsub://PROJECT/TOPIC."
  }
  assert {
    condition     = google_pubsub_topic_iam_member.publisher.role == "roles/pubsub.publisher" && google_pubsub_topic_iam_member.subscriber.role == "roles/pubsub.subscriber"
    error_message = "Publishing and attaching subscriptions are granted on the topic."
  }
  assert {
    condition = toset(google_project_iam_custom_role.subscriptions.permissions) == toset([
      "pubsub.subscriptions.consume", "pubsub.subscriptions.create", "pubsub.subscriptions.delete", "pubsub.subscriptions.get",
    ])
    error_message = "The project-level role holds only what per-instance subscriptions need (not roles/pubsub.editor)."
  }
  assert {
    condition     = google_project_iam_member.subscriptions.member == var.member
    error_message = "The role is granted to the service account."
  }
}
