# Plan-mode checks of what matters in the deployment (the stand-in
# provider plans without a cloud; see infra/terraform).

variables {
  project_id        = "sluice-test"
  region            = "europe-west1"
  name              = "sluice-sp"
  image             = "europe-west1-docker.pkg.dev/sluice-test/sluice/sluice:v1.0.0"
  access_keys       = "AKIDEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
  maintenance_token = "0123456789abcdef0123456789abcdef"
}

override_resource {
  target = google_service_account.sluice
  values = {
    email = "sluice-sp@sluice-test.iam.gserviceaccount.com"
  }
}

override_resource {
  target = google_project_iam_custom_role.ddl
  values = {
    name = "projects/sluice-test/roles/sluiceSpannerDdl_sluice_sp"
  }
}

override_resource {
  target = module.service.google_cloud_run_v2_service.this
  values = {
    uri = "https://sluice-sp-abcdefghij-ew.a.run.app/"
  }
}

run "service" {
  command = plan

  assert {
    condition     = output.service_config.min_instances == 0
    error_message = "The service must scale to zero (min instances 0)."
  }
  assert {
    condition     = output.service_config.plain_env["SLUICE_STORE"] == "spanner://projects/sluice-test/instances/sluice-sp/databases/sluice"
    error_message = "SLUICE_STORE is spanner://projects/P/instances/I/databases/D of the deployment's database."
  }
  assert {
    condition     = output.service_config.plain_env["SLUICE_WAKEUPS"] == "pubsub://sluice-test/sluice-wake-sluice-sp-sluice" && output.wakeups_topic == "sluice-wake-sluice-sp-sluice"
    error_message = "Wake-ups go through the deployment's topic, named as the store names it by default (sluice-wake-INSTANCE-DATABASE)."
  }
  assert {
    condition = output.service_config.secret_env == {
      SLUICE_ACCESS_KEYS       = "sluice-sp-access-keys"
      SLUICE_MAINTENANCE_TOKEN = "sluice-sp-maintenance-token"
    }
    error_message = "The access keys and the maintenance token come from Secret Manager."
  }
  assert {
    condition     = length(setintersection(keys(output.service_config.plain_env), ["SLUICE_ACCESS_KEYS", "SLUICE_MAINTENANCE_TOKEN"])) == 0
    error_message = "No secret may be a plain environment variable."
  }
  assert {
    condition     = output.service_config.plain_env["SLUICE_REGION"] == "us-east-1" && output.service_config.service_account == "sluice-sp@sluice-test.iam.gserviceaccount.com"
    error_message = "SLUICE_REGION is set and the service runs as the deployment's own account."
  }
}

run "url" {
  command = plan

  assert {
    condition     = output.sqs_endpoint_url == "https://sluice-sp-abcdefghij-ew.a.run.app"
    error_message = "sqs_endpoint_url is the service's URL without a trailing slash."
  }
  assert {
    condition     = output.maintenance_url == "https://sluice-sp-abcdefghij-ew.a.run.app/_sluice/maintain"
    error_message = "The scheduler must call POST /_sluice/maintain on the service."
  }
}

run "instance_and_database" {
  command = plan

  assert {
    condition     = google_spanner_instance.this.processing_units == 100 && google_spanner_instance.this.config == "regional-europe-west1"
    error_message = "The instance is the smallest (100 processing units), regional in the service's region, by default."
  }
  assert {
    condition     = google_spanner_database.this.database_dialect == "GOOGLE_STANDARD_SQL" && google_spanner_database.this.enable_drop_protection && google_spanner_database.this.deletion_protection
    error_message = "The database is GoogleSQL (the store's dialect) and protected from drops by default."
  }
}

run "least_privilege" {
  command = plan

  assert {
    condition     = google_spanner_database_iam_member.user.role == "roles/spanner.databaseUser" && google_spanner_database_iam_member.user.database == "sluice" && google_spanner_database_iam_member.user.instance == "sluice-sp"
    error_message = "Data access is roles/spanner.databaseUser on the deployment's database only."
  }
  assert {
    condition     = toset(google_project_iam_custom_role.ddl.permissions) == toset(["spanner.databaseOperations.get", "spanner.databases.updateDdl"])
    error_message = "The migrations' role holds only UpdateDatabaseDdl and waiting for it (not roles/spanner.databaseAdmin)."
  }
  assert {
    condition     = google_spanner_database_iam_member.ddl.role == "projects/sluice-test/roles/sluiceSpannerDdl_sluice_sp" && google_spanner_database_iam_member.ddl.database == "sluice"
    error_message = "The DDL role is granted on the deployment's database, not the project or the instance."
  }
  assert {
    condition     = google_spanner_database_iam_member.user.member == "serviceAccount:sluice-sp@sluice-test.iam.gserviceaccount.com" && google_spanner_database_iam_member.ddl.member == google_spanner_database_iam_member.user.member
    error_message = "Both grants are the service's own account's."
  }
}

run "size_is_configurable" {
  command = plan

  variables {
    processing_units = 2000
  }

  assert {
    condition     = google_spanner_instance.this.processing_units == 2000
    error_message = "processing_units sizes the instance."
  }
}

run "processing_units_between_steps_are_refused" {
  command = plan

  variables {
    processing_units = 1500
  }

  expect_failures = [var.processing_units]
}

run "processing_units_below_100_are_refused" {
  command = plan

  variables {
    processing_units = 50
  }

  expect_failures = [var.processing_units]
}

run "a_secret_in_extra_env_is_refused" {
  command = plan

  variables {
    extra_env = { SLUICE_ACCESS_KEYS = "AKID:SECRET" }
  }

  expect_failures = [var.extra_env]
}
