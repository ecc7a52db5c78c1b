variables {
  project_id    = "sluice-test"
  region        = "europe-west1"
  name          = "sluice-db"
  member        = "serviceAccount:sluice@sluice-test.iam.gserviceaccount.com"
  max_instances = 10
  db_password   = "correct horse/battery+staple"
}

override_resource {
  target = google_sql_database_instance.this
  values = {
    connection_name    = "sluice-test:europe-west1:sluice-db"
    private_ip_address = "10.20.0.3"
  }
}

run "through_the_socket" {
  command = plan

  assert {
    condition     = nonsensitive(output.store_url) == "postgres://sluice:correct%20horse%2Fbattery%2Bstaple@/sluice?host=/cloudsql/sluice-test:europe-west1:sluice-db&sslmode=disable&pool_max_conns=8"
    error_message = "The store URL reaches the socket of the Cloud SQL connection, with the password escaped."
  }
  assert {
    condition     = output.config.connector_enforcement == "REQUIRED" && output.config.public_ip && output.config.authorized_networks == 0
    error_message = "The public IP accepts the Cloud SQL connectors only."
  }
  assert {
    condition     = output.config.client_grant.role == "roles/cloudsql.client" && output.config.client_grant.member == var.member
    error_message = "The member may connect through the connector."
  }
  assert {
    condition     = output.config.client_grant.condition == "resource.name == \"projects/sluice-test/instances/sluice-db\" && resource.type == \"sqladmin.googleapis.com/Instance\""
    error_message = "roles/cloudsql.client is limited to this instance."
  }
  assert {
    condition     = output.config.max_connections == "110"
    error_message = "max_connections covers every instance's pool and LISTEN connection: 10 * (8 + 1) + 20."
  }
}

run "private_ip" {
  command = plan

  variables {
    private_network = "projects/sluice-test/global/networks/sluice"
  }

  assert {
    condition     = nonsensitive(output.store_url) == "postgres://sluice:correct%20horse%2Fbattery%2Bstaple@10.20.0.3:5432/sluice?sslmode=require&pool_max_conns=8"
    error_message = "Over private IP the store URL names the instance's private address and requires TLS."
  }
  assert {
    condition     = !output.config.public_ip && google_sql_database_instance.this.settings[0].ip_configuration[0].private_network == "projects/sluice-test/global/networks/sluice"
    error_message = "With a private network the instance has no public IP."
  }
  assert {
    condition     = output.config.client_grant == null && length(google_project_iam_member.cloudsql_client) == 0
    error_message = "Over private IP no Cloud SQL client grant is made (nothing uses the connector)."
  }
}

run "short_password_is_refused" {
  command = plan

  variables {
    db_password = "short"
  }

  expect_failures = [var.db_password]
}
