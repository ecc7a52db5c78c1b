variables {
  project_id   = "sluice-test"
  region       = "europe-west1"
  name         = "sluice-maintain"
  endpoint_url = "https://sluice-abc.a.run.app/"
  token        = "0123456789abcdef0123456789abcdef"
}

run "posts_to_the_maintenance_path_with_the_token" {
  command = plan

  assert {
    condition     = google_cloud_scheduler_job.this.http_target[0].uri == "https://sluice-abc.a.run.app/_sluice/maintain"
    error_message = "The job calls /_sluice/maintain on the endpoint (one slash)."
  }
  assert {
    condition     = google_cloud_scheduler_job.this.http_target[0].http_method == "POST"
    error_message = "The maintenance path takes POST."
  }
  assert {
    condition     = google_cloud_scheduler_job.this.http_target[0].headers["Authorization"] == "Bearer 0123456789abcdef0123456789abcdef"
    error_message = "The job sends the token as a bearer token."
  }
  assert {
    condition     = google_cloud_scheduler_job.this.schedule == "* * * * *"
    error_message = "The pass runs every minute by default."
  }
}

run "http_endpoint_is_refused" {
  command = plan

  variables {
    endpoint_url = "http://sluice-abc.a.run.app"
  }

  expect_failures = [var.endpoint_url]
}
