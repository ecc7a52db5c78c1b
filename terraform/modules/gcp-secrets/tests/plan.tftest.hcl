variables {
  project_id = "sluice-test"
  accessor   = "serviceAccount:sluice@sluice-test.iam.gserviceaccount.com"
  secrets = {
    one = "first value"
    two = "second value"
  }
}

run "each_secret_readable_by_the_accessor_only" {
  command = plan

  assert {
    condition     = toset(keys(google_secret_manager_secret_iam_member.accessor)) == toset(["one", "two"])
    error_message = "Every secret gets its own grant."
  }
  assert {
    condition = alltrue([for id, g in google_secret_manager_secret_iam_member.accessor :
    g.role == "roles/secretmanager.secretAccessor" && g.member == var.accessor && g.secret_id == id])
    error_message = "The grant is secretAccessor for the accessor, on the secret itself."
  }
  assert {
    condition     = google_secret_manager_secret_version.this["two"].secret_data == "second value"
    error_message = "Each version holds its secret's value."
  }
}

run "a_user_is_refused_as_accessor" {
  command = plan

  variables {
    accessor = "user:someone@example.com"
  }

  expect_failures = [var.accessor]
}
